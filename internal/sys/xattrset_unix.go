//go:build linux || darwin

package sys

import "golang.org/x/sys/unix"

// Fsetxattr sets the extended attribute name of the file fd is open on to
// value (flags 0: create or replace). The errno is returned unchanged.
func Fsetxattr(fd int, name string, value []byte) error {
	return retry(func() error { return unix.Fsetxattr(fd, name, value, 0) })
}
