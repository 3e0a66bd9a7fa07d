package sys

import (
	"syscall"

	"golang.org/x/sys/windows"
)

// NTSTATUS values the mapping names that x/sys/windows does not define as
// constants of the same spelling (the values are from ntstatus.h).
const (
	statusStoppedOnSymlink         windows.NTStatus = 0x8000002D
	statusNotImplemented           windows.NTStatus = 0xC0000002
	statusInvalidInfoClass         windows.NTStatus = 0xC0000003
	statusInvalidParameter         windows.NTStatus = 0xC000000D
	statusNoSuchFile               windows.NTStatus = 0xC000000F
	statusInvalidDeviceRequest     windows.NTStatus = 0xC0000010
	statusAccessDenied             windows.NTStatus = 0xC0000022
	statusObjectNameInvalid        windows.NTStatus = 0xC0000033
	statusObjectNameNotFound       windows.NTStatus = 0xC0000034
	statusObjectNameCollision      windows.NTStatus = 0xC0000035
	statusObjectPathInvalid        windows.NTStatus = 0xC0000039
	statusObjectPathNotFound       windows.NTStatus = 0xC000003A
	statusObjectPathSyntaxBad      windows.NTStatus = 0xC000003B
	statusSharingViolation         windows.NTStatus = 0xC0000043
	statusFileLockConflict         windows.NTStatus = 0xC0000054
	statusLockNotGranted           windows.NTStatus = 0xC0000055
	statusDeletePending            windows.NTStatus = 0xC0000056
	statusDiskFull                 windows.NTStatus = 0xC000007F
	statusMediaWriteProtected      windows.NTStatus = 0xC00000A2
	statusFileIsADirectory         windows.NTStatus = 0xC00000BA
	statusNotSupported             windows.NTStatus = 0xC00000BB
	statusNotSameDevice            windows.NTStatus = 0xC00000D4
	statusDirectoryNotEmpty        windows.NTStatus = 0xC0000101
	statusNotADirectory            windows.NTStatus = 0xC0000103
	statusNameTooLong              windows.NTStatus = 0xC0000106
	statusCannotDelete             windows.NTStatus = 0xC0000121
	statusFileDeleted              windows.NTStatus = 0xC0000123
	statusIOReparseTagNotHandled   windows.NTStatus = 0xC0000279
	statusReparsePointNotResolved  windows.NTStatus = 0xC0000280
	statusDirectoryIsAReparsePoint windows.NTStatus = 0xC0000281
)

// errnoOfStatus turns the NTSTATUS of a failed NT call into the errno the
// callers of this package classify (errors.go's codeForErrno, statelock's
// contention checks), which on Windows are the values Go invents for them
// (syscall.EEXIST, syscall.EBUSY, ...), compared with ==.
//
// The NT statuses are kept apart where Win32 would fold them together:
// DELETE_PENDING (a name whose object is being deleted while a handle
// keeps it) is EBUSY, contention to wait out, never "permission denied" as
// its Win32 translation ERROR_ACCESS_DENIED would say; a reparse point
// met where the open may not follow one is ELOOP, as a symlink is under
// O_NOFOLLOW; NOT_IMPLEMENTED and INVALID_INFO_CLASS (an information class
// the filesystem or Wine lacks) are ENOSYS, so the caller's fallbacks
// trigger. Any other status goes through the system's own translation to a
// Win32 error and then errnoOfWin32.
func errnoOfStatus(s windows.NTStatus) error {
	switch s {
	case statusObjectNameCollision:
		return syscall.EEXIST
	case statusObjectNameNotFound, statusObjectPathNotFound, statusNoSuchFile, statusFileDeleted:
		return syscall.ENOENT
	case statusNotADirectory:
		return syscall.ENOTDIR
	case statusFileIsADirectory:
		return syscall.EISDIR
	case statusDirectoryNotEmpty:
		return syscall.ENOTEMPTY
	case statusNotSameDevice:
		return syscall.EXDEV
	case statusSharingViolation, statusDeletePending, statusFileLockConflict, statusLockNotGranted:
		return syscall.EBUSY
	case statusAccessDenied, statusCannotDelete:
		return syscall.EACCES
	case statusObjectNameInvalid, statusObjectPathInvalid, statusObjectPathSyntaxBad, statusInvalidParameter:
		return syscall.EINVAL
	case statusNotImplemented, statusInvalidInfoClass, statusNotSupported, statusInvalidDeviceRequest:
		return syscall.ENOSYS
	case statusStoppedOnSymlink, statusIOReparseTagNotHandled, statusReparsePointNotResolved, statusDirectoryIsAReparsePoint:
		return syscall.ELOOP
	case statusDiskFull:
		return syscall.ENOSPC
	case statusMediaWriteProtected:
		return syscall.EROFS
	case statusNameTooLong:
		return syscall.ENAMETOOLONG
	}
	return errnoOfWin32(s.Errno())
}

// errnoOfWin32 does for the Win32 error of a kernel32 call what
// errnoOfStatus does for an NTSTATUS. Note that Go defines syscall.ENOTDIR
// on Windows as ERROR_PATH_NOT_FOUND: a missing path component must
// therefore become ENOENT here, or a caller would read it as "not a
// directory". Unmapped errors are returned unchanged (their text is the
// system's message, and callers classify them as I/O errors).
func errnoOfWin32(e syscall.Errno) error {
	switch e {
	case windows.ERROR_FILE_EXISTS, windows.ERROR_ALREADY_EXISTS:
		return syscall.EEXIST
	case windows.ERROR_FILE_NOT_FOUND, windows.ERROR_PATH_NOT_FOUND, windows.ERROR_BAD_NETPATH:
		return syscall.ENOENT
	case windows.ERROR_DIRECTORY:
		return syscall.ENOTDIR
	case windows.ERROR_DIR_NOT_EMPTY:
		return syscall.ENOTEMPTY
	case windows.ERROR_NOT_SAME_DEVICE:
		return syscall.EXDEV
	case windows.ERROR_SHARING_VIOLATION, windows.ERROR_LOCK_VIOLATION, windows.ERROR_DELETE_PENDING:
		return syscall.EBUSY
	case windows.ERROR_ACCESS_DENIED:
		return syscall.EACCES
	case windows.ERROR_INVALID_NAME, windows.ERROR_INVALID_PARAMETER, windows.ERROR_BAD_PATHNAME:
		return syscall.EINVAL
	case windows.ERROR_NOT_SUPPORTED, windows.ERROR_INVALID_FUNCTION, windows.ERROR_CALL_NOT_IMPLEMENTED:
		return syscall.ENOSYS
	case windows.ERROR_STOPPED_ON_SYMLINK, windows.ERROR_CANT_ACCESS_FILE, windows.ERROR_CANT_RESOLVE_FILENAME:
		return syscall.ELOOP
	case windows.ERROR_DISK_FULL, windows.ERROR_HANDLE_DISK_FULL:
		return syscall.ENOSPC
	case windows.ERROR_WRITE_PROTECT:
		return syscall.EROFS
	case windows.ERROR_FILENAME_EXCED_RANGE:
		return syscall.ENAMETOOLONG
	}
	return e
}

// errnoOf classifies the error of an x/sys/windows call: an NTSTATUS
// (the Nt* calls), a Win32 error (the kernel32 calls), or anything else
// (returned unchanged).
func errnoOf(err error) error {
	switch e := err.(type) {
	case nil:
		return nil
	case windows.NTStatus:
		return errnoOfStatus(e)
	case syscall.Errno:
		return errnoOfWin32(e)
	}
	return err
}

// errnoNames are the symbolic names of the errno values this package
// returns on Windows.
var errnoNames = map[syscall.Errno]string{
	syscall.EEXIST:       "EEXIST",
	syscall.ENOENT:       "ENOENT",
	syscall.ENOTDIR:      "ENOTDIR",
	syscall.EISDIR:       "EISDIR",
	syscall.ENOTEMPTY:    "ENOTEMPTY",
	syscall.EXDEV:        "EXDEV",
	syscall.EBUSY:        "EBUSY",
	syscall.EACCES:       "EACCES",
	syscall.EPERM:        "EPERM",
	syscall.EINVAL:       "EINVAL",
	syscall.ENOSYS:       "ENOSYS",
	syscall.ELOOP:        "ELOOP",
	syscall.ENOSPC:       "ENOSPC",
	syscall.EROFS:        "EROFS",
	syscall.ENAMETOOLONG: "ENAMETOOLONG",
	syscall.EINTR:        "EINTR",
	syscall.EIO:          "EIO",
}

// ErrnoName is the symbolic name of en ("EINVAL"), or "" when it is not one
// of the values this package returns (a Win32 error passed through).
func ErrnoName(en syscall.Errno) string { return errnoNames[en] }
