package sys

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// renameat is unix.Renameat with its two names on the stack when they fit
// (cstr_linux.go): the renameat system call x/sys makes on amd64.
func renameat(olddir int, oldname string, newdir int, newname string) error {
	var oldbuf, newbuf [cstrMax]byte
	if !cstr(&oldbuf, oldname) || !cstr(&newbuf, newname) {
		return unix.Renameat(olddir, oldname, newdir, newname)
	}
	_, _, e := unix.Syscall6(unix.SYS_RENAMEAT, uintptr(olddir), uintptr(unsafe.Pointer(&oldbuf[0])), uintptr(newdir), uintptr(unsafe.Pointer(&newbuf[0])), 0, 0)
	return errnoOf(e)
}
