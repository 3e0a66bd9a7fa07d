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

// OpenDirNoSymlinks opens the directory at the relative or absolute path
// beneath dirfd in one openat2 call with RESOLVE_NO_SYMLINKS: no component,
// the last included, may be a symlink. Any failure (ENOSYS on kernels before
// 5.6 or under a seccomp filter, ELOOP, ENOTDIR, ENOENT) leaves the caller
// to walk component by component, which also explains the failure.
func OpenDirNoSymlinks(dirfd int, path string) (int, error) {
	var fd int
	err := retry(func() (err error) {
		fd, err = openat2(dirfd, path, &unix.OpenHow{
			Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK,
			Resolve: unix.RESOLVE_NO_SYMLINKS,
		})
		return err
	})
	return fd, err
}
