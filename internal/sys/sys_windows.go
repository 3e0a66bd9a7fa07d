package sys

import "io/fs"

// AtCWD names the current working directory as a directory descriptor.
const AtCWD = -100

// Stat is the part of a stat result exactfs uses.
type Stat struct {
	Dev, Ino, Nlink uint64
	Size            int64
	MtimeNs         int64
	CtimeNs         int64
	Mode            fs.FileMode
	Uid, Gid        uint32
}

// Windows has no O_NOFOLLOW, no descriptor-relative opens and no atomic
// no-replace rename reachable through the same surface, so every call fails
// closed until a safe implementation exists.

func Open(dirfd int, name string, flag int, perm uint32) (int, error) { return -1, ErrUnsupported }
func OpenDir(dirfd int, name string) (int, error)                     { return -1, ErrUnsupported }
func OpenDirNoSymlinks(dirfd int, path string) (int, error)           { return -1, ErrUnsupported }
func Close(fd int) error                                              { return ErrUnsupported }
func Dup(fd int) (int, error)                                         { return -1, ErrUnsupported }
func Fstat(fd int) (Stat, error)                                      { return Stat{}, ErrUnsupported }
func Lstat(dirfd int, name string) (Stat, error)                      { return Stat{}, ErrUnsupported }
func Pread(fd int, p []byte, off int64) (int, error)                  { return 0, ErrUnsupported }
func Write(fd int, p []byte) error                                    { return ErrUnsupported }
func Fchmod(fd int, perm uint32) error                                { return ErrUnsupported }
func Ftruncate(fd int, size int64) error                              { return ErrUnsupported }
func Seek(fd int, off int64) error                                    { return ErrUnsupported }
func Mkdir(dirfd int, name string, perm uint32) error                 { return ErrUnsupported }
func Unlink(dirfd int, name string) error                             { return ErrUnsupported }
func Rmdir(dirfd int, name string) error                              { return ErrUnsupported }
func Link(olddir int, oldname string, newdir int, newname string) error {
	return ErrUnsupported
}
func Rename(olddir int, oldname string, newdir int, newname string) error {
	return ErrUnsupported
}
func RenameNoReplace(olddir int, oldname string, newdir int, newname string) error {
	return ErrUnsupported
}
func Exchange(olddir int, oldname string, newdir int, newname string) error {
	return ErrUnsupported
}
func Fsync(fd int) error                    { return ErrUnsupported }
func ReadDirNames(fd int) ([]string, error) { return nil, ErrUnsupported }
