//go:build unix

package sys

import "golang.org/x/sys/unix"

// Fchown sets the owner and group of an open descriptor; -1 leaves one
// unchanged.
func Fchown(fd, uid, gid int) error {
	return retry(func() error { return unix.Fchown(fd, uid, gid) })
}
