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

// FsyncBarrier writes fd's data and metadata to the drive and orders them
// before any write issued after it (fcntl F_BARRIERFSYNC), without F_FULLFSYNC's
// flush of the drive's whole cache. It suffices where a full flush follows
// before anything is promised: a staged file before the rename that
// publishes it, when the directory is then flushed with Fsync (F_FULLFSYNC
// empties the drive's cache, the staged bytes included, and the barrier
// keeps a rename that reached the medium from overtaking them). It is not a
// durability promise on its own. Where the filesystem has no barrier the
// kernel (macOS 11 and later) promotes it to F_FULLFSYNC; older kernels'
// refusals are promoted here, then fall back as Fsync does.
func FsyncBarrier(fd int) error {
	return retry(func() error {
		_, err := unix.FcntlInt(uintptr(fd), unix.F_BARRIERFSYNC, 0)
		if err == unix.ENOTSUP || err == unix.EINVAL || err == unix.ENOTTY {
			return Fsync(fd)
		}
		return err
	})
}

// OpenDirNoSymlinks has no one-call form on macOS; the caller walks.
func OpenDirNoSymlinks(dirfd int, path string) (int, error) { return -1, unix.ENOSYS }
