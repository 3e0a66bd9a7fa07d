//go:build !exactfs_portable

package sys

import (
	"io"

	"golang.org/x/sys/unix"
)

// OFDLock takes an exclusive open-file-description lock on the bytes
// [start, start+length) of the file fd is open on (length 0: to the end of
// the file and beyond), without waiting. fd must be open for writing. The
// lock belongs to the open file description: it lasts while any descriptor
// of it is open and the kernel drops it when the last one goes, however
// its holder dies. ErrWouldBlock: another open file description holds a
// conflicting lock. ErrUnsupported: the filesystem takes no such locks.
func OFDLock(fd int, start, length int64) error { return ofdSetLock(fd, unix.F_WRLCK, start, length) }

// ofdSetLock takes an OFD lock of type typ (F_WRLCK, F_RDLCK) without
// waiting, its errors sorted into ErrWouldBlock and ErrUnsupported.
func ofdSetLock(fd int, typ int16, start, length int64) error {
	lk := unix.Flock_t{Type: typ, Whence: io.SeekStart, Start: start, Len: length}
	err := retry(func() error { return unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk) })
	switch err {
	case unix.EAGAIN, unix.EACCES:
		return ErrWouldBlock
	case unix.ENOLCK, unix.EINVAL, unix.EOPNOTSUPP, unix.ENOSYS:
		return ErrUnsupported
	}
	return err
}

// OFDHeld asks the kernel whether another open file description holds a
// lock on the bytes [start, start+length) of the file fd is open on. fd may
// be read-only: F_OFD_GETLK tests for a conflict and takes nothing. known
// is false when the filesystem does not answer; then nothing follows.
func OFDHeld(fd int, start, length int64) (held, known bool) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: start, Len: length}
	if err := retry(func() error { return unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &lk) }); err != nil {
		return false, false
	}
	return lk.Type != unix.F_UNLCK, true
}

// OFDSharedLock is OFDLock for a shared lock: it conflicts with exclusive
// locks of other open file descriptions and coexists with their shared
// ones. fd must be open for reading. ErrWouldBlock and ErrUnsupported mean
// what they mean for OFDLock.
func OFDSharedLock(fd int, start, length int64) error {
	return ofdSetLock(fd, unix.F_RDLCK, start, length)
}

// OFDQuery asks which lock, if any, another open file description holds
// on the bytes [start, start+length) of fd's file, as OFDHeld does, with
// the kernel's description of it. ErrUnsupported: the filesystem does not
// answer; then nothing follows.
func OFDQuery(fd int, start, length int64) (RangeLock, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: start, Len: length}
	err := retry(func() error { return unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &lk) })
	switch err {
	case nil:
	case unix.ENOLCK, unix.EINVAL, unix.EOPNOTSUPP, unix.ENOSYS:
		return RangeLock{}, ErrUnsupported
	default:
		return RangeLock{}, err
	}
	if lk.Type == unix.F_UNLCK {
		return RangeLock{}, nil
	}
	return RangeLock{Held: true, Shared: lk.Type == unix.F_RDLCK, Start: lk.Start, Len: lk.Len, Pid: int(lk.Pid)}, nil
}
