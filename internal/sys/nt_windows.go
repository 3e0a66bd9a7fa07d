package sys

import (
	"os"
	"strings"
	"syscall"
	"unsafe"

	"github.com/exactfs/exactfs/internal/winpath"
	"golang.org/x/sys/windows"
)

// The NT layer under the Windows functions of this package: every open is
// NtCreateFile relative to a directory handle, with FILE_OPEN_REPARSE_POINT,
// so the handle is on the object at the name itself, never on what a
// symlink, junction or other reparse point there would lead to; every
// rename, link and delete is NtSetInformationFile on a handle, so it acts
// on the object that handle is open on, not on whatever a name holds by the
// time the call runs.
//
// Handles stand in for descriptors: a handle is an int here (it fits on
// 64-bit Windows), and os.NewFile takes a handle on Windows, so the
// int-based API and the *os.File built on it keep their shape.

// Information classes and structures x/sys/windows does not define.
const (
	fileStandardInformation     = 5
	fileLinkInformation         = 11
	fileAttributeTagInformation = 35
	fileIDInformation           = 59
	fileRenameInformationEx     = 65
)

// fileIDInfo is FILE_ID_INFO: the 64-bit volume serial number and the
// 128-bit file id, the identity of a file on its volume (on NTFS the upper
// half of the id is zero; ReFS uses all of it).
type fileIDInfo struct {
	VolumeSerialNumber uint64
	FileID             [16]byte
}

// fileStandardInfo is FILE_STANDARD_INFO.
type fileStandardInfo struct {
	AllocationSize int64
	EndOfFile      int64
	NumberOfLinks  uint32
	DeletePending  byte
	Directory      byte
	_              [2]byte
}

// fileBasicInfo is FILE_BASIC_INFO (times in 100 ns units since 1601).
type fileBasicInfo struct {
	CreationTime   int64
	LastAccessTime int64
	LastWriteTime  int64
	ChangeTime     int64
	FileAttributes uint32
	_              uint32
}

// fileAttributeTagInfo is FILE_ATTRIBUTE_TAG_INFO.
type fileAttributeTagInfo struct {
	FileAttributes uint32
	ReparseTag     uint32
}

// fileRenameInfo is the fixed head of FILE_RENAME_INFORMATION and
// FILE_LINK_INFORMATION (the same layout): a BOOLEAN ReplaceIfExists, or
// the ULONG Flags of the Ex classes, the directory the new name is
// relative to, and the name's length in bytes; the UTF-16 name follows.
type fileRenameInfo struct {
	Flags          uint32
	RootDirectory  windows.Handle
	FileNameLength uint32
	FileName       [1]uint16
}

// Access masks of the handles this package opens. No handle that outlives
// the call that made it holds DELETE, unless the caller asked for it
// (OpenHandle): an open handle with DELETE access makes every other
// process's open that does not share delete fail, Go's own os.Open among
// them.
const (
	dirAccess  = windows.FILE_LIST_DIRECTORY | windows.FILE_TRAVERSE | windows.FILE_READ_ATTRIBUTES | windows.FILE_READ_EA | windows.READ_CONTROL | windows.SYNCHRONIZE
	statAccess = windows.FILE_READ_ATTRIBUTES | windows.SYNCHRONIZE
	shareAll   = windows.FILE_SHARE_READ | windows.FILE_SHARE_WRITE | windows.FILE_SHARE_DELETE
)

// ntName checks a name that is to be opened relative to a directory handle
// and returns it as NT wants it. "/" becomes "\"; "." (the directory
// itself) becomes the empty name, which NT opens as the directory the
// handle is open on. Every other component must pass winpath.CheckName:
// NT takes a name exactly as given, where Win32 programs (the TypeScript
// peers among them) strip trailing dots and spaces, open DOS devices for
// CON, NUL, COM1 and the rest, and read "name:stream" as an alternate data
// stream of name. A name the two would resolve differently is refused
// (EINVAL) before any call, never rewritten.
func ntName(name string) (string, error) {
	if strings.IndexByte(name, 0) >= 0 {
		return "", syscall.EINVAL
	}
	if name == "." {
		return "", nil
	}
	if err := checkComponents(name); err != nil {
		return "", err
	}
	return strings.ReplaceAll(name, "/", `\`), nil
}

// checkComponents applies winpath.CheckName to every component of p but
// ".", which names the directory itself.
func checkComponents(p string) error {
	for _, c := range splitNT(p) {
		if c != "." && winpath.CheckName(c) != nil {
			return syscall.EINVAL
		}
	}
	return nil
}

// absNTName returns the NT path of an absolute Win32 path, "C:\x" or
// "\\server\share\x", or ok=false when name is not one. Device paths
// ("\\?\", "\\.\") are refused: they bypass the rules this package
// relies on; so is every component (the server and share included) that
// winpath.CheckName refuses. Like an absolute name given to openat, an
// absolute name ignores the directory handle; reparse points in its
// non-final components are followed, as symlinks are in openat's
// (OpenDirNoSymlinks refuses them).
func absNTName(name string) (nt string, ok bool, err error) {
	p := strings.ReplaceAll(name, "/", `\`)
	switch {
	case strings.HasPrefix(p, `\\?\`), strings.HasPrefix(p, `\\.\`), strings.HasPrefix(p, `\??\`):
		return "", true, syscall.EINVAL
	case len(p) >= 3 && p[1] == ':' && p[2] == '\\' && isLetter(p[0]):
		rest := p[3:]
		if strings.IndexByte(rest, 0) >= 0 || checkComponents(rest) != nil {
			return "", true, syscall.EINVAL
		}
		return `\??\` + p, true, nil
	case strings.HasPrefix(p, `\\`):
		if strings.IndexByte(p, 0) >= 0 || checkComponents(p[2:]) != nil {
			return "", true, syscall.EINVAL
		}
		return `\??\UNC\` + p[2:], true, nil
	case strings.HasPrefix(p, `\`), len(p) >= 2 && p[1] == ':' && isLetter(p[0]):
		// "\x" (the current drive's root) and "C:x" (drive-relative):
		// what they name depends on per-drive process state.
		return "", true, syscall.EINVAL
	}
	return "", false, nil
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// ntCreate is NtCreateFile of name relative to root (0: name is an NT
// path), case-insensitive as Win32 opens are (so two spellings of a name
// reach the same file, as they do for a Win32 peer), synchronous, and
// with FILE_OPEN_REPARSE_POINT always added.
func ntCreate(root windows.Handle, name string, access, attrs, share, disposition, options uint32) (windows.Handle, error) {
	u, err := windows.NewNTUnicodeString(name)
	if err != nil {
		return windows.InvalidHandle, syscall.EINVAL
	}
	oa := windows.OBJECT_ATTRIBUTES{RootDirectory: root, ObjectName: u, Attributes: windows.OBJ_CASE_INSENSITIVE}
	oa.Length = uint32(unsafe.Sizeof(oa))
	var h windows.Handle
	var iosb windows.IO_STATUS_BLOCK
	err = windows.NtCreateFile(&h, access|windows.SYNCHRONIZE, &oa, &iosb, nil, attrs, share, disposition,
		options|windows.FILE_OPEN_REPARSE_POINT|windows.FILE_SYNCHRONOUS_IO_NONALERT, 0, 0)
	if err != nil {
		return windows.InvalidHandle, errnoOf(err)
	}
	return h, nil
}

// openAt opens name relative to the directory dirfd (or the current
// directory, for AtCWD; an absolute name ignores dirfd, as openat does).
func openAt(dirfd int, name string, access, attrs, share, disposition, options uint32) (windows.Handle, error) {
	if nt, abs, err := absNTName(name); abs {
		if err != nil {
			return windows.InvalidHandle, err
		}
		return ntCreate(0, nt, access, attrs, share, disposition, options)
	}
	rel, err := ntName(name)
	if err != nil {
		return windows.InvalidHandle, err
	}
	root := windows.Handle(dirfd)
	if dirfd == AtCWD {
		cwd, err := openCWD()
		if err != nil {
			return windows.InvalidHandle, err
		}
		defer windows.CloseHandle(cwd)
		root = cwd
	}
	return ntCreate(root, rel, access, attrs, share, disposition, options)
}

// openCWD opens the current directory. Its path comes from the process
// (os.Getwd), and is trusted as the working directory is on Unix.
func openCWD() (windows.Handle, error) {
	wd, err := os.Getwd()
	if err != nil {
		return windows.InvalidHandle, err
	}
	nt, abs, err := absNTName(wd)
	if err != nil {
		return windows.InvalidHandle, err
	}
	if !abs {
		return windows.InvalidHandle, syscall.EINVAL
	}
	return ntCreate(0, nt, dirAccess, 0, shareAll, windows.FILE_OPEN, windows.FILE_DIRECTORY_FILE)
}

// reopen opens the object h is open on once more (the empty name relative
// to h), with its own access and sharing: a new handle, never a name
// lookup.
func reopen(h windows.Handle, access, share, options uint32) (windows.Handle, error) {
	return ntCreate(h, "", access, 0, share, windows.FILE_OPEN, options)
}

func queryInfo(h windows.Handle, class uint32, buf unsafe.Pointer, size uintptr) error {
	var iosb windows.IO_STATUS_BLOCK
	if err := windows.NtQueryInformationFile(h, &iosb, (*byte)(buf), uint32(size), class); err != nil {
		return errnoOf(err)
	}
	return nil
}

func setInfo(h windows.Handle, class uint32, buf unsafe.Pointer, size uintptr) error {
	var iosb windows.IO_STATUS_BLOCK
	if err := windows.NtSetInformationFile(h, &iosb, (*byte)(buf), uint32(size), class); err != nil {
		return errnoOf(err)
	}
	return nil
}

// setName is NtSetInformationFile of a FILE_RENAME_INFORMATION-shaped
// class (rename, rename Ex, link) on h: newname relative to the directory
// newdir.
func setName(h windows.Handle, class uint32, flags uint32, newdir int, newname string) error {
	root := windows.Handle(newdir)
	if newdir == AtCWD {
		cwd, err := openCWD()
		if err != nil {
			return err
		}
		defer windows.CloseHandle(cwd)
		root = cwd
	}
	rel, err := ntName(newname)
	if err != nil {
		return err
	}
	if rel == "" {
		return syscall.EINVAL
	}
	u, err := windows.UTF16FromString(rel)
	if err != nil {
		return syscall.EINVAL
	}
	u = u[:len(u)-1] // no terminating NUL: the length says where the name ends
	head := unsafe.Offsetof(fileRenameInfo{}.FileName)
	size := head + uintptr(len(u))*2
	if min := unsafe.Sizeof(fileRenameInfo{}); size < min {
		// The system refuses a buffer shorter than the structure
		// (STATUS_INVALID_PARAMETER), as a one-letter name makes it.
		size = min
	}
	// A buffer of uint64s, so the structure's handle field is aligned.
	buf := make([]uint64, (size+7)/8+1)
	ri := (*fileRenameInfo)(unsafe.Pointer(&buf[0]))
	ri.Flags = flags
	ri.RootDirectory = root
	ri.FileNameLength = uint32(len(u) * 2)
	copy(unsafe.Slice(&ri.FileName[0], len(u)), u)
	return setInfo(h, class, unsafe.Pointer(&buf[0]), size)
}

// fallbackStatus reports whether err says that an Ex information class (or
// its POSIX semantics) is not available here, so the legacy class is to be
// tried: NOT_IMPLEMENTED (Wine 8), INVALID_INFO_CLASS (before Windows 10
// 1709), NOT_SUPPORTED and INVALID_PARAMETER (filesystems without POSIX
// semantics: FAT, some SMB servers).
func fallbackStatus(err error) bool { return err == syscall.ENOSYS || err == syscall.EINVAL }

// renameHandle renames the object h is open on (h must hold DELETE access)
// to newname relative to newdir. With replace false an existing newname is
// never replaced (EEXIST). With replace true it is, with POSIX semantics
// where the filesystem has them (readers of the old target keep it); the
// legacy fallback fails with EACCES while anyone has the target open.
func renameHandle(h windows.Handle, newdir int, newname string, replace bool) error {
	if !replace {
		return setName(h, windows.FileRenameInformation, 0, newdir, newname)
	}
	err := setName(h, fileRenameInformationEx,
		windows.FILE_RENAME_REPLACE_IF_EXISTS|windows.FILE_RENAME_POSIX_SEMANTICS|windows.FILE_RENAME_IGNORE_READONLY_ATTRIBUTE,
		newdir, newname)
	if fallbackStatus(err) {
		err = setName(h, windows.FileRenameInformation, 1, newdir, newname)
	}
	return err
}

// deleteHandle deletes the object h is open on (h must hold DELETE
// access). With POSIX semantics (Windows 10 1709+ on NTFS) the name goes
// at once, even while other handles stay open; with the legacy fallback
// (FAT, Wine) the object is deleted, and its name freed, when the last
// handle on it closes, and until then the name is delete-pending (opens
// and creates at it fail with EBUSY). Either way it is the object of h
// that goes, whatever name it has by then: a file created at its old name
// afterwards is another object and stays.
func deleteHandle(h windows.Handle) error {
	flags := uint32(windows.FILE_DISPOSITION_DELETE | windows.FILE_DISPOSITION_POSIX_SEMANTICS | windows.FILE_DISPOSITION_IGNORE_READONLY_ATTRIBUTE)
	err := setInfo(h, windows.FileDispositionInformationEx, unsafe.Pointer(&flags), unsafe.Sizeof(flags))
	if fallbackStatus(err) {
		del := uint32(1) // FILE_DISPOSITION_INFORMATION: BOOLEAN DeleteFile, padded
		err = setInfo(h, windows.FileDispositionInformation, unsafe.Pointer(&del), 1)
	}
	return err
}
