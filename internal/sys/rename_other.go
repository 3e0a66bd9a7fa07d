//go:build unix && !linux && !darwin

package sys

import "golang.org/x/sys/unix"

// RenameNoReplace is unavailable here; exactfs falls back to link(2) where
// it can and fails closed where it cannot.
func RenameNoReplace(olddir int, oldname string, newdir int, newname string) error {
	return unix.ENOSYS
}

// Exchange is unavailable here.
func Exchange(olddir int, oldname string, newdir int, newname string) error {
	return unix.ENOSYS
}

// Fsync flushes fd to stable storage.
func Fsync(fd int) error {
	return retry(func() error { return unix.Fsync(fd) })
}

// OpenDirNoSymlinks has no one-call form here; the caller walks.
func OpenDirNoSymlinks(dirfd int, path string) (int, error) { return -1, unix.ENOSYS }
