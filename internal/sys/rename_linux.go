package sys

import "golang.org/x/sys/unix"

// RenameNoReplace renames oldname to newname and fails with EEXIST if
// newname exists. EINVAL or ENOSYS mean the filesystem or kernel lacks the
// flag; the caller decides what to fall back to.
func RenameNoReplace(olddir int, oldname string, newdir int, newname string) error {
	return retry(func() error {
		return unix.Renameat2(olddir, oldname, newdir, newname, unix.RENAME_NOREPLACE)
	})
}

// Exchange atomically swaps the objects at oldname and newname. Both must exist.
func Exchange(olddir int, oldname string, newdir int, newname string) error {
	return retry(func() error {
		return unix.Renameat2(olddir, oldname, newdir, newname, unix.RENAME_EXCHANGE)
	})
}

// Fsync flushes fd to stable storage.
func Fsync(fd int) error {
	return retry(func() error { return unix.Fsync(fd) })
}
