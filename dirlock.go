package exactfs

import (
	"errors"
	"os"

	"github.com/exactfs/exactfs/internal/sys"
)

// TryLock takes an exclusive advisory lock (flock) on the open directory d,
// without waiting: ok is false when another open file description holds
// it. The lock belongs to d's own open of the directory, so two Dirs on one
// directory exclude each other even in one process, and it is released
// when d is closed. Where the system takes no such locks (Windows), err
// has CodeUnsupported.
//
// It holds a reference to d's descriptor for the call, so a racing Close
// cannot lock a number the kernel has given to another file.
func (d *Dir) TryLock() (ok bool, err error) {
	err = d.use("flock", func(fd int) error { return sys.TryFlock(fd) })
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, sys.ErrWouldBlock):
		return false, nil
	}
	return false, wrap("flock", d.path, err)
}

// StatFile returns the identity of the open file f from one fstat, without
// reading its bytes: the SHA-256 field is zero. Use CaptureFile for an
// identity that proves content.
func StatFile(f *os.File) (Identity, error) {
	var st sys.Stat
	err := sys.Control(f, func(fd int) (err error) {
		st, err = sys.Fstat(fd)
		return err
	})
	if err != nil {
		return Identity{}, wrap("stat", f.Name(), err)
	}
	return identityOf(st, [32]byte{}), nil
}
