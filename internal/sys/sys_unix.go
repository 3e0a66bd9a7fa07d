//go:build unix

package sys

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// AtCWD names the current working directory as a directory descriptor.
const AtCWD = unix.AT_FDCWD

// Stat is the part of a stat result exactfs uses.
type Stat struct {
	Dev, Ino, Nlink uint64
	Size            int64
	MtimeNs         int64
	CtimeNs         int64
	Mode            fs.FileMode // type bits and permission bits, as io/fs
	Uid, Gid        uint32
}

func retry(f func() error) error {
	var err error
	for range maxEINTR {
		if err = f(); err != unix.EINTR {
			return err
		}
	}
	return err
}

// Open opens name relative to dirfd. It always adds O_NOFOLLOW and O_CLOEXEC,
// and O_NONBLOCK so that a FIFO planted at the name cannot block the caller
// (except on an exclusive create, where nothing planted can be opened).
// flag uses the os.O_* constants.
func Open(dirfd int, name string, flag int, perm uint32) (int, error) {
	// O_NONBLOCK keeps a FIFO or device planted at name from blocking the
	// open. An exclusive create never opens an existing object (O_EXCL
	// with O_CREAT fails with EEXIST on anything at name, a symlink
	// included), so it is left out there: the descriptor of the new
	// regular file is then in blocking mode, and os.NewFile wraps it
	// without trying to register it with the runtime's poller (an F_GETFL
	// answered, then an epoll_ctl that fails with EPERM on a regular file:
	// one system call per exclusive create saved).
	nonblock := unix.O_NONBLOCK
	if flag&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL {
		nonblock = 0
	}
	var fd int
	err := retry(func() (err error) {
		fd, err = openat(dirfd, name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC|nonblock, perm)
		return err
	})
	return fd, err
}

// OpenDir opens the directory name relative to dirfd without following a
// symlink at name.
func OpenDir(dirfd int, name string) (int, error) {
	return Open(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
}

// Close closes fd.
func Close(fd int) error { return unix.Close(fd) }

func fromUnix(st *unix.Stat_t) Stat {
	return Stat{
		Dev:     uint64(st.Dev),
		Ino:     uint64(st.Ino),
		Nlink:   uint64(st.Nlink),
		Size:    st.Size,
		MtimeNs: st.Mtim.Nano(),
		CtimeNs: st.Ctim.Nano(),
		Mode:    modeOf(uint32(st.Mode)),
		Uid:     st.Uid,
		Gid:     st.Gid,
	}
}

func modeOf(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// Fstat stats an open descriptor.
func Fstat(fd int) (Stat, error) {
	var st unix.Stat_t
	err := retry(func() error { return unix.Fstat(fd, &st) })
	return fromUnix(&st), err
}

// Lstat stats name relative to dirfd without following a symlink.
func Lstat(dirfd int, name string) (Stat, error) {
	var st unix.Stat_t
	err := retry(func() error { return fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	return fromUnix(&st), err
}

// Pread reads from fd at off.
func Pread(fd int, p []byte, off int64) (int, error) {
	var n int
	err := retry(func() (err error) {
		n, err = unix.Pread(fd, p, off)
		return err
	})
	return n, err
}

// Write writes all of p to fd at its current offset.
func Write(fd int, p []byte) error {
	for len(p) > 0 {
		var n int
		err := retry(func() (err error) {
			n, err = unix.Write(fd, p)
			return err
		})
		if err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// Fchmod sets the permission bits of an open descriptor.
func Fchmod(fd int, perm uint32) error {
	return retry(func() error { return unix.Fchmod(fd, perm) })
}

// Ftruncate truncates an open descriptor.
func Ftruncate(fd int, size int64) error {
	return retry(func() error { return unix.Ftruncate(fd, size) })
}

// Seek sets the offset of fd.
func Seek(fd int, off int64) error {
	_, err := unix.Seek(fd, off, 0)
	return err
}

// Mkdir creates a directory relative to dirfd.
func Mkdir(dirfd int, name string, perm uint32) error {
	return retry(func() error { return unix.Mkdirat(dirfd, name, perm) })
}

// Unlink removes the non-directory name relative to dirfd.
func Unlink(dirfd int, name string) error {
	return retry(func() error { return unix.Unlinkat(dirfd, name, 0) })
}

// Rmdir removes the empty directory name relative to dirfd.
func Rmdir(dirfd int, name string) error {
	return retry(func() error { return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR) })
}

// Link makes newname a hard link to oldname. linkat without AT_SYMLINK_FOLLOW
// links a symlink itself, never its target.
func Link(olddir int, oldname string, newdir int, newname string) error {
	return retry(func() error { return unix.Linkat(olddir, oldname, newdir, newname, 0) })
}

// Rename is a plain rename that replaces newname.
func Rename(olddir int, oldname string, newdir int, newname string) error {
	return retry(func() error { return renameat(olddir, oldname, newdir, newname) })
}

// ReadDirNames lists the names in the open directory fd (without "." and
// ".."). fd stays open and owned by the caller.
func ReadDirNames(fd int) ([]string, error) {
	dup, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), ".")
	defer f.Close()
	return f.Readdirnames(-1)
}

// Dup duplicates fd, with close-on-exec set on the copy.
func Dup(fd int) (int, error) {
	var nfd int
	err := retry(func() (err error) {
		nfd, err = unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		return err
	})
	return nfd, err
}
