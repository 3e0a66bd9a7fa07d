//go:build !exactfs_portable

package sys

import (
	"io"

	"golang.org/x/sys/unix"
)

// OFDUnlock drops any open-file-description lock of fd's open file
// description on the bytes [start, start+length) (F_OFD_SETLK F_UNLCK).
func OFDUnlock(fd int, start, length int64) error {
	lk := unix.Flock_t{Type: unix.F_UNLCK, Whence: io.SeekStart, Start: start, Len: length}
	return retry(func() error { return unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk) })
}

// OFDReadLock takes a shared open-file-description lock on the bytes
// [start, start+length) without waiting; fd must be open for reading. The
// errno is returned unchanged.
func OFDReadLock(fd int, start, length int64) error {
	lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: io.SeekStart, Start: start, Len: length}
	return retry(func() error { return unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk) })
}

// OFDConflict asks, as OFDHeld does, whether another open file description
// holds a lock on the bytes [start, start+length) of fd's file, and where
// the lock the kernel names begins (the kernel names one when there are
// several). The errno is returned unchanged; then nothing follows.
func OFDConflict(fd int, start, length int64) (held bool, lockStart int64, err error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: start, Len: length}
	if err := retry(func() error { return unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &lk) }); err != nil {
		return false, 0, err
	}
	return lk.Type != unix.F_UNLCK, lk.Start, nil
}

// OFDTryLock is OFDLock with the errno of a refusal returned unchanged
// (EAGAIN, EINVAL, ...), for a caller that reports what the filesystem said
// rather than acting on it.
func OFDTryLock(fd int, start, length int64) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: start, Len: length}
	return retry(func() error { return unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk) })
}
