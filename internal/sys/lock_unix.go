//go:build unix

package sys

import "golang.org/x/sys/unix"

// ErrWouldBlock is the errno of a lock request that would have to wait.
var ErrWouldBlock error = unix.EWOULDBLOCK

// TryFlock takes flock(LOCK_EX|LOCK_NB) on fd: ErrWouldBlock when another
// open file description holds a flock on the file. The lock belongs to the
// open file description, and goes when its last descriptor is closed.
func TryFlock(fd int) error {
	return retry(func() error { return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) })
}
