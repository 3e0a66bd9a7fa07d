package sys

import (
	"io/fs"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The calls in this file have no Unix counterpart: they act on the object
// a handle is open on, which NT allows and Unix does not. An exact unlink
// or a no-replace detach built on them verifies an object and then moves
// or deletes that same object, with no window in which the name could be
// pointed at another one.

// How says what a handle opened by OpenHandle may do, and what it keeps
// others from doing.
type How uint32

const (
	// HowRead: read data.
	HowRead How = 1 << iota
	// HowWrite: write data.
	HowWrite
	// HowDelete: DELETE access, for RenameOpen and DeleteOpen through the
	// handle. Keep such handles short-lived: while one is open, any other
	// open that does not share delete (Go's os.Open, for one) fails.
	HowDelete
	// HowDenyWrite: share read and delete only. The open fails with EBUSY
	// while any other handle may write the object, and while this handle
	// is open no handle can be opened for writing.
	HowDenyWrite
	// HowDir: the object must be a directory (ENOTDIR otherwise).
	HowDir
	// HowNonDir: the object must not be a directory (EISDIR otherwise).
	HowNonDir
)

// OpenHandle opens the existing object name relative to dirfd, never
// following a reparse point at name (the handle is on the link itself), as
// how says.
func OpenHandle(dirfd int, name string, how How) (int, error) {
	if !ready {
		return -1, ErrUnsupported
	}
	return openHandle(dirfd, name, how)
}

func openHandle(dirfd int, name string, how How) (int, error) {
	access := uint32(windows.FILE_READ_ATTRIBUTES)
	if how&HowRead != 0 {
		access |= windows.FILE_GENERIC_READ
	}
	if how&HowWrite != 0 {
		access |= windows.FILE_GENERIC_WRITE
	}
	if how&HowDelete != 0 {
		access |= windows.DELETE
	}
	share := uint32(shareAll)
	if how&HowDenyWrite != 0 {
		share = windows.FILE_SHARE_READ | windows.FILE_SHARE_DELETE
	}
	var options uint32
	switch how & (HowDir | HowNonDir) {
	case HowDir:
		options = windows.FILE_DIRECTORY_FILE
	case HowNonDir:
		options = windows.FILE_NON_DIRECTORY_FILE
	case HowDir | HowNonDir:
		return -1, syscall.EINVAL
	}
	fh, err := openAt(dirfd, name, access, 0, share, windows.FILE_OPEN, options)
	if err != nil {
		return -1, err
	}
	return int(fh), nil
}

// RenameOpen gives the object fd is open on the name newname relative to
// newdir, never replacing an object there (EEXIST). fd must hold DELETE
// access (OpenHandle with HowDelete). It is that object that moves,
// whatever name it has by now: if its old name has meanwhile been given
// to another object, that object stays where it is.
func RenameOpen(fd int, newdir int, newname string) error {
	if !ready {
		return ErrUnsupported
	}
	return renameHandle(h(fd), newdir, newname, false)
}

// DeleteOpen deletes the object fd is open on, whatever name it has by
// now; fd must hold DELETE access. With POSIX delete semantics (Windows 10
// 1709+ on NTFS) its name is gone at once; without them (FAT, SMB, Wine)
// the object and its name go when the last handle on it closes, and until
// then its name is delete-pending: opening or creating it fails with
// EBUSY. A non-empty directory fails with ENOTEMPTY.
func DeleteOpen(fd int) error {
	if !ready {
		return ErrUnsupported
	}
	return deleteHandle(h(fd))
}

// DirEntry is one entry of a directory listing, as the directory itself
// records it (nothing is opened or followed to make it).
type DirEntry struct {
	Name       string
	FileID     uint64      // the 64-bit file id (FILE_ID_BOTH_DIR_INFO)
	Attributes uint32      // FILE_ATTRIBUTE_*
	Mode       fs.FileMode // the type bits: ModeDir, ModeSymlink (any reparse point) or 0
}

// ReadDirEntries lists the entries of the open directory fd, "." and ".."
// left out, through a new handle on the same directory (fd's own
// enumeration state is untouched).
func ReadDirEntries(fd int) ([]DirEntry, error) {
	if !ready {
		return nil, ErrUnsupported
	}
	return readDir(fd)
}

// Offsets in FILE_ID_BOTH_DIR_INFO.
const (
	dirNextEntry  = 0
	dirAttributes = 56
	dirNameLength = 60
	dirFileID     = 96
	dirName       = 104
)

func readDir(fd int) ([]DirEntry, error) {
	dh, err := reopen(h(fd), windows.FILE_LIST_DIRECTORY, shareAll, windows.FILE_DIRECTORY_FILE)
	if err != nil {
		return nil, err
	}
	defer windows.CloseHandle(dh)
	buf := make([]uint64, 64<<10/8) // 8-byte aligned, as the entries are
	b := unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), len(buf)*8)
	var out []DirEntry
	class := uint32(windows.FileIdBothDirectoryRestartInfo)
	for {
		err := windows.GetFileInformationByHandleEx(dh, class, &b[0], uint32(len(b)))
		class = windows.FileIdBothDirectoryInfo
		if err == windows.ERROR_NO_MORE_FILES {
			return out, nil
		}
		if err != nil {
			return nil, errnoOf(err)
		}
		for off := 0; ; {
			e := b[off:]
			n := le32(e[dirNameLength:])
			name := windows.UTF16ToString(unsafe.Slice((*uint16)(unsafe.Pointer(&e[dirName])), n/2))
			if name != "." && name != ".." {
				attrs := le32(e[dirAttributes:])
				d := DirEntry{Name: name, FileID: le64(e[dirFileID:]), Attributes: attrs}
				switch {
				case attrs&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0:
					d.Mode = fs.ModeSymlink
				case attrs&windows.FILE_ATTRIBUTE_DIRECTORY != 0:
					d.Mode = fs.ModeDir
				}
				out = append(out, d)
			}
			next := le32(e[dirNextEntry:])
			if next == 0 {
				break
			}
			off += int(next)
		}
	}
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
