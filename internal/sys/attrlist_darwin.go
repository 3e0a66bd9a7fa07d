package sys

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// macOS keeps a file's extended ACL in kernel-managed storage that the
// xattr calls cannot reach: removing com.apple.system.Security through
// fremovexattr is refused for every caller and reading it for every caller
// but root. The supported, documented interface is the attribute-list
// pair fgetattrlist/fsetattrlist with ATTR_CMN_EXTENDED_SECURITY
// (getattrlist(2), setattrlist(2)); both act on a descriptor.
//
// x/sys/unix has neither (only the path form Setattrlist), and darwin
// forbids raw system-call traps since Go 1.12, so they are called the way
// x/sys/unix calls everything on darwin: through libSystem, by a trampoline
// (attrlist_darwin.s) and the runtime's syscall.syscall6, which the runtime
// publishes for exactly this use (its linkname comment names x/sys). No cgo
// is involved. The private __fchmod_extended/__fstat64_extended stubs that
// Libc's fchmodx_np/fstatx_np wrap would do the same but are not in any
// public header, so they are not used.

// Fgetattrlist fills buf with the attributes attrs selects of the file fd
// is open on (getattrlist(2) layout: a uint32 total length, then the
// attributes). The errno is returned unchanged.
func Fgetattrlist(fd int, attrs *unix.Attrlist, buf []byte, options uint32) error {
	return retry(func() error {
		return attrlistCall(libc_fgetattrlist_trampoline_addr, fd, attrs, buf, options)
	})
}

// Fsetattrlist sets the attributes attrs selects on the file fd is open on,
// from buf (setattrlist(2) layout: the attributes, no leading length). The
// errno is returned unchanged.
func Fsetattrlist(fd int, attrs *unix.Attrlist, buf []byte, options uint32) error {
	return retry(func() error {
		return attrlistCall(libc_fsetattrlist_trampoline_addr, fd, attrs, buf, options)
	})
}

func attrlistCall(fn uintptr, fd int, attrs *unix.Attrlist, buf []byte, options uint32) error {
	var p unsafe.Pointer
	if len(buf) > 0 {
		p = unsafe.Pointer(&buf[0])
	}
	_, _, e := syscall_syscall6(fn, uintptr(fd), uintptr(unsafe.Pointer(attrs)), uintptr(p), uintptr(len(buf)), uintptr(options), 0)
	if e != 0 {
		return e
	}
	return nil
}

// Implemented in the runtime (runtime/sys_darwin.go): calls the libSystem
// function fn on the system stack with errno capture.
//
//go:linkname syscall_syscall6 syscall.syscall6
func syscall_syscall6(fn, a1, a2, a3, a4, a5, a6 uintptr) (r1, r2 uintptr, err syscall.Errno)

var libc_fgetattrlist_trampoline_addr uintptr

//go:cgo_import_dynamic libc_fgetattrlist fgetattrlist "/usr/lib/libSystem.B.dylib"

var libc_fsetattrlist_trampoline_addr uintptr

//go:cgo_import_dynamic libc_fsetattrlist fsetattrlist "/usr/lib/libSystem.B.dylib"
