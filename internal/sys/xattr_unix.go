//go:build linux || darwin

package sys

import "golang.org/x/sys/unix"

// Fgetxattr reads the extended attribute name of the file fd is open on
// into buf and returns its length; with an empty buf it returns the length
// only. The errno is returned unchanged (ENODATA or ENOATTR: absent).
func Fgetxattr(fd int, name string, buf []byte) (int, error) {
	var n int
	err := retry(func() (err error) {
		n, err = unix.Fgetxattr(fd, name, buf)
		return err
	})
	return n, err
}

// Fremovexattr removes the extended attribute name of the file fd is open
// on. The errno is returned unchanged.
func Fremovexattr(fd int, name string) error {
	return retry(func() error { return unix.Fremovexattr(fd, name) })
}
