//go:build linux && (amd64 || arm64)

package sys

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The name-taking calls of a lock cycle (a dozen fstatat, two openat, a
// renameat) each copied their name to a new NUL-terminated slice on the
// heap (unix.ByteSliceFromString): the most frequent allocation of an
// Update. Here a name that fits is copied to a buffer on the stack
// instead. The system call is the same one x/sys makes on these
// architectures, with the same arguments; only where the bytes live
// differs. A longer name, or one with a NUL (which x/sys refuses with
// EINVAL), takes x/sys's path.

// cstrMax bounds the names copied to the stack: NAME_MAX (255) and its
// NUL, which covers every single component and most relative paths.
const cstrMax = 256

// cstr copies name to buf with its NUL; false when it does not fit or
// holds a NUL.
func cstr(buf *[cstrMax]byte, name string) bool {
	if len(name) >= cstrMax {
		return false
	}
	for i := 0; i < len(name); i++ {
		if name[i] == 0 {
			return false
		}
	}
	copy(buf[:], name)
	buf[len(name)] = 0
	return true
}

// errnoOf turns a raw errno into the error x/sys returns for it (nil for
// 0), so that callers comparing with unix.ENOENT or errors.Is see no
// difference.
func errnoOf(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

func fstatat(dirfd int, name string, st *unix.Stat_t, flags int) error {
	var buf [cstrMax]byte
	if !cstr(&buf, name) {
		return unix.Fstatat(dirfd, name, st, flags)
	}
	// The pointer conversions stay inside the call expression: the
	// runtime keeps buf alive and in place for the call's duration (as
	// the syscall package does with its callers' buffers).
	_, _, e := unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(st)), uintptr(flags), 0, 0)
	return errnoOf(e)
}

func openat(dirfd int, name string, flags int, perm uint32) (int, error) {
	var buf [cstrMax]byte
	if !cstr(&buf, name) {
		return unix.Openat(dirfd, name, flags, perm)
	}
	r, _, e := unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(&buf[0])), uintptr(flags), uintptr(perm), 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

func openat2(dirfd int, path string, how *unix.OpenHow) (int, error) {
	var buf [cstrMax]byte
	if !cstr(&buf, path) {
		return unix.Openat2(dirfd, path, how)
	}
	r, _, e := unix.Syscall6(unix.SYS_OPENAT2, uintptr(dirfd), uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(how)), unix.SizeofOpenHow, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}
