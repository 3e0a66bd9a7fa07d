// Package sys is the thin layer of raw, per-platform system calls under
// exactfs: descriptor-relative opens that never follow a final symlink,
// fstat/fstatat, rename with and without flags, link, unlink, fsync.
//
// It holds no policy. Every function retries EINTR a bounded number of times
// and otherwise returns the errno unchanged, so that callers can classify it.
// On platforms where the calls cannot be made safe (Windows), every function
// returns ErrUnsupported and exactfs fails closed.
package sys

import (
	"errors"
	"io/fs"
	"runtime"
)

// ErrUnsupported is returned by every call on a platform where exactfs
// cannot make the operation safe.
var ErrUnsupported = errors.New("unsupported on " + runtime.GOOS + ": exactfs fails closed rather than risk another process's file")

// maxEINTR bounds the retries of a call interrupted by a signal. The Go
// runtime installs its handlers with SA_RESTART, so EINTR is rare; a bound
// keeps a pathological signal storm from spinning forever.
const maxEINTR = 100

// PermBits is PermBits of st's mode.
func (st Stat) PermBits() uint32 { return PermBits(st.Mode) }

// PermBits returns the permission bits of mode as the kernel keeps them:
// rwx for owner, group and others, and the setuid, setgid and sticky bits.
func PermBits(mode fs.FileMode) uint32 {
	b := uint32(mode.Perm())
	if mode&fs.ModeSetuid != 0 {
		b |= 0o4000
	}
	if mode&fs.ModeSetgid != 0 {
		b |= 0o2000
	}
	if mode&fs.ModeSticky != 0 {
		b |= 0o1000
	}
	return b
}
