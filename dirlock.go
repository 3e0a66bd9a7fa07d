package exactfs

import (
	"os"

	"github.com/exactfs/exactfs/internal/sys"
)

// StatFile returns the identity of the open file f from one fstat, without
// reading its bytes: the SHA-256 field is zero. Use CaptureFile for an
// identity that proves content.
func StatFile(f *os.File) (Identity, error) {
	var st sys.Stat
	err := sys.Control(f, func(fd int) (err error) {
		st, err = sys.Fstat(fd)
		return err
	})
	if err != nil {
		return Identity{}, wrap("stat", f.Name(), err)
	}
	return identityOf(st, [32]byte{}), nil
}

// StatFileRaw is the fstat of the open file f in the system's stat record
// (RawStat), with no allocation: for the packages of this module, which
// judge an open record by its owner, mode and links.
func StatFileRaw(f *os.File) (st RawStat, err error) {
	err = sys.Control(f, func(fd int) (err error) {
		st, err = sys.Fstat(fd)
		return err
	})
	return st, err
}

// PreadFile reads up to len(p) bytes of f at offset off in exactly one
// system call: n < len(p) with a nil error is the end of the file (or a
// short read the caller must treat as one). It is the cheap form a record
// held under a lock is read with: one fstat for its size, then one read of
// a byte more that must stop at that size, where os.File.ReadAt would read
// again to find the end.
func PreadFile(f *os.File, p []byte, off int64) (n int, err error) {
	err = sys.Control(f, func(fd int) (err error) {
		n, err = sys.Pread(fd, p, off)
		return err
	})
	return n, err
}

// BirthTime returns the birth (creation) time of the file f is open on, in
// nanoseconds since the epoch (statx STATX_BTIME on Linux). ok is false
// where the platform or the filesystem keeps or reports none; then nothing
// follows from it.
func BirthTime(f *os.File) (ns int64, ok bool, err error) {
	err = sys.Control(f, func(fd int) (err error) {
		ns, ok, err = sys.BirthTime(fd)
		return err
	})
	return ns, ok, err
}
