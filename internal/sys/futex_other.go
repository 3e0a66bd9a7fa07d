//go:build !linux || exactfs_portable

package sys

import "time"

// FutexWait: there are no futexes here (the Go cohort's mailbox is Linux's).
func FutexWait(addr *uint32, val uint32, d time.Duration) (bool, error) {
	return false, ErrUnsupported
}

// FutexWake: there are no futexes here.
func FutexWake(addr *uint32, n int) error { return ErrUnsupported }

// MmapShared: the mailbox is not mapped on this platform.
func MmapShared(fd int, length int) ([]byte, error) { return nil, ErrUnsupported }

// Munmap: nothing is mapped on this platform.
func Munmap(b []byte) error { return ErrUnsupported }
