//go:build !windows

package exactfs

import (
	"errors"

	"github.com/exactfs/exactfs/internal/sys"
)

// TryLock takes an exclusive advisory lock (flock) on the open directory d,
// without waiting: ok is false when another open file description holds
// it. The lock belongs to d's own open of the directory, so two Dirs on one
// directory exclude each other even in one process, and it is released
// when d is closed. On Windows, which locks no directory, it is a lock on
// a file inside the directory (dirlock_windows.go).
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
