package statelock

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// ofdSupported reports whether this platform has open-file-description
// locks, the kernel attestation of SPEC §4.7.
const ofdSupported = true

// errOFDConflict means another open file description holds a lock on the
// inode: a live exactfs holder. errOFDUnsupported means the filesystem
// takes no such locks (some FUSE and network filesystems).
var (
	errOFDConflict    = errors.New("another descriptor holds a kernel lock on the record")
	errOFDUnsupported = errors.New("the filesystem does not support OFD locks")
)

// ofdLock takes an exclusive OFD lock on the whole file f, which must be
// open for writing. The lock belongs to the open file description, not to
// the process or thread: it lasts exactly as long as f is open, and the
// kernel drops it when the holder dies, however it dies. That is what lets
// a contender prove a holder gone without trusting pids.
func ofdLock(f *os.File) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart}
	for {
		err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
		switch err {
		case unix.EINTR:
			continue
		case unix.EAGAIN, unix.EACCES:
			return errOFDConflict
		case unix.ENOLCK, unix.EINVAL, unix.EOPNOTSUPP, unix.ENOSYS:
			return errOFDUnsupported
		}
		return err
	}
}

// ofdHeld asks the kernel whether any open file description holds a lock
// on the inode f is open on. f may be read-only: F_OFD_GETLK checks for a
// conflict without taking anything. known is false when the filesystem does
// not answer (then nothing can be concluded).
func ofdHeld(f *os.File) (held, known bool) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart}
	for {
		err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false, false
		}
		return lk.Type != unix.F_UNLCK, true
	}
}
