//go:build !exactfs_portable

package sys

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The futex calls of the Go cohort's mailbox (statelock/internal/wake):
// a word in a MAP_SHARED mapping of a file, waited on and woken across
// processes. They are the shared futex operations (no FUTEX_PRIVATE_FLAG):
// the kernel keys a shared futex by the file's inode and offset, so every
// process that maps the mailbox meets on the same word.

const (
	futexWait = 0 // FUTEX_WAIT
	futexWake = 1 // FUTEX_WAKE
)

// FutexWait sleeps while *addr == val, for at most d (d <= 0: returns at
// once), and tells how the sleep ended: ranOut is true when it ended
// without a wake or a change of the word (its d passed, or a signal
// interrupted it), false when a FutexWake woke it or *addr was not val.
// An error is returned only when the kernel refused the call (ENOSYS,
// EFAULT, EINVAL).
func FutexWait(addr *uint32, val uint32, d time.Duration) (ranOut bool, err error) {
	if d <= 0 {
		return true, nil
	}
	ts := unix.NsecToTimespec(int64(d))
	_, _, e := unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWait, uintptr(val),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
	switch e {
	case 0, unix.EAGAIN:
		return false, nil
	case unix.ETIMEDOUT, unix.EINTR:
		return true, nil
	}
	return false, e
}

// FutexWake wakes up to n processes sleeping in FutexWait on addr.
func FutexWake(addr *uint32, n int) error {
	_, _, e := unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWake, uintptr(n), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// MmapShared maps length bytes of the file fd is open on (read-write,
// MAP_SHARED: stores are seen by every process that maps the file).
func MmapShared(fd int, length int) ([]byte, error) {
	return unix.Mmap(fd, 0, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

// Munmap undoes MmapShared.
func Munmap(b []byte) error { return unix.Munmap(b) }
