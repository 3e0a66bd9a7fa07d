package sys

import "golang.org/x/sys/unix"

// RenameNoReplace renames oldname to newname and fails with EEXIST if
// newname exists (renameatx_np with RENAME_EXCL).
func RenameNoReplace(olddir int, oldname string, newdir int, newname string) error {
	return retry(func() error {
		return unix.RenameatxNp(olddir, oldname, newdir, newname, unix.RENAME_EXCL)
	})
}

// Exchange atomically swaps the objects at oldname and newname
// (renameatx_np with RENAME_SWAP).
func Exchange(olddir int, oldname string, newdir int, newname string) error {
	return retry(func() error {
		return unix.RenameatxNp(olddir, oldname, newdir, newname, unix.RENAME_SWAP)
	})
}

// Fsync flushes fd to stable storage. Plain fsync on macOS only reaches the
// drive's cache; F_FULLFSYNC asks the drive to flush it.
func Fsync(fd int) error {
	return retry(func() error {
		_, err := unix.FcntlInt(uintptr(fd), unix.F_FULLFSYNC, 0)
		if err == unix.ENOTSUP || err == unix.EINVAL {
			// Some filesystems (network, FUSE) refuse F_FULLFSYNC; fsync is
			// the best they offer.
			return unix.Fsync(fd)
		}
		return err
	})
}

// OpenDirNoSymlinks has no one-call form on macOS; the caller walks.
func OpenDirNoSymlinks(dirfd int, path string) (int, error) { return -1, unix.ENOSYS }
