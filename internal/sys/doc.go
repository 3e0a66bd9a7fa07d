// Package sys is the thin layer of raw, per-platform system calls under
// exactfs: descriptor-relative opens that never follow a final symlink,
// fstat/fstatat, rename with and without flags, link, unlink, fsync.
//
// It holds no policy. Every function retries EINTR a bounded number of times
// and otherwise returns the errno unchanged, so that callers can classify it.
// Where the calls cannot be made safe, they return ErrUnsupported and
// exactfs fails closed; on Windows every call does so while the gate is
// shut, which it is in every program the user has not opted in for (see
// gate_windows.go).
package sys

import "io/fs"

// ErrUnsupported is returned by every call on a platform where exactfs
// cannot make the operation safe. It is one value (callers compare it with
// ==), but its text is the platform's: on Windows, while the gate is shut,
// it names the opt-in that opens it (unsupportedText, gate_windows.go).
var ErrUnsupported error = &unsupportedError{}

type unsupportedError struct{ _ byte } // not zero-size: its address is its own

func (*unsupportedError) Error() string { return unsupportedText() }

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
