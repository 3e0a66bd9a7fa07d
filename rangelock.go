package exactfs

import (
	"errors"
	"os"

	"github.com/exactfs/exactfs/internal/sys"
)

// Kernel locks on a record.
//
// A lock here is a byte-range lock that belongs to an open file
// description (Linux's OFD locks, F_OFD_SETLK): it lasts exactly as long
// as the description is open, two descriptors opened separately conflict
// even inside one process, and the kernel drops it when the last
// descriptor goes, however its holder dies (SIGKILL included). That is what
// lets a contender prove a holder gone without trusting a pid: a lock
// nobody holds is a holder that is gone. The locks are advisory on Linux;
// the ranges can lie beyond any byte a record has.
//
// statelock takes, drops and asks about its locks on records (the
// holder's range, the kernel slots, the sidecar's lock) through these
// calls only. Its waiter queue (statelock/internal/wake) and the
// capability probes still call the system-call layer themselves.
//
// Where there are no such locks the answers are honest rather than
// optimistic: TryLockRange and UnlockRange fail with an error matching
// ErrUnsupported, RangeHeld answers "not known", RangeHolderOf fails with
// ErrUnsupported. That is every platform but Linux (macOS and the BSDs
// have process-owned POSIX locks only, which a second open in the same
// process silently shares), a Linux build with the exactfs_portable tag,
// and a filesystem that refuses them (some FUSE and network filesystems).
//
// On Windows, TryLockRange and UnlockRange are LockFileEx and
// UnlockFileEx on the same range: they belong to the handle, conflict
// between two handles of one process, and go when the handle is closed or
// its process dies. Two differences matter. Windows locks are mandatory
// (while one is held, other handles cannot read or write its bytes, so
// lock only bytes no reader needs), and UnlockRange must name exactly the
// range that was locked. Windows cannot say who holds a range without
// taking it: RangeHeld is "not known" there and RangeHolderOf unsupported.

// LockMode is the kind of a range lock.
type LockMode int8

const (
	// LockExclusive conflicts with every lock of another open file
	// description on an overlapping range. The file must be open for
	// writing.
	LockExclusive LockMode = iota
	// LockShared coexists with other shared locks and conflicts with
	// exclusive ones. The file must be open for reading.
	LockShared
)

// TryLockRange takes a lock of the given mode on the bytes
// [start, start+length) of the file f is open on (length 0: from start to
// the end of the file and beyond), without waiting. ok is false, with a
// nil error, when another open file description holds a conflicting lock.
// An error matching ErrUnsupported means the platform or the filesystem
// takes no such locks. Locking a range f already holds again changes its
// mode (Linux) and never conflicts with f itself.
func TryLockRange(f *os.File, mode LockMode, start, length int64) (ok bool, err error) {
	err = sys.Control(f, func(fd int) error { return tryLockRange(fd, mode, start, length) })
	return lockAnswer(f.Name(), err)
}

func lockAnswer(path string, err error) (ok bool, _ error) {
	switch {
	case err == nil:
		return true, nil
	case err == sys.ErrWouldBlock:
		return false, nil
	case err == sys.ErrUnsupported:
		return false, &Error{Op: "lock", Path: path, Code: CodeUnsupported, Err: err,
			Detail: "the filesystem takes no open-file-description locks"}
	}
	return false, wrap("lock", path, err)
}

func tryLockRange(fd int, mode LockMode, start, length int64) error {
	if mode == LockShared {
		return sys.OFDSharedLock(fd, start, length)
	}
	return sys.OFDLock(fd, start, length)
}

// UnlockRange drops the lock f's open file description holds on the bytes
// [start, start+length), if any. Closing f's last descriptor drops every
// lock of f as well; an explicit unlock is for a lock that must be gone
// before something else happens (before a close that others wait for, or
// while f stays open).
func UnlockRange(f *os.File, start, length int64) error {
	return unlockAnswer(f.Name(), sys.Control(f, func(fd int) error { return sys.OFDUnlock(fd, start, length) }))
}

func unlockAnswer(path string, err error) error {
	if err == sys.ErrUnsupported {
		return &Error{Op: "unlock", Path: path, Code: CodeUnsupported, Err: err,
			Detail: "the filesystem takes no open-file-description locks"}
	}
	if err != nil {
		return wrap("unlock", path, err)
	}
	return nil
}

// RangeHeld asks the kernel whether an open file description other than
// f's holds a lock on any of the bytes [start, start+length) of f's file.
// It takes nothing, and f may be read-only. known is false when the
// platform or filesystem does not answer; then nothing follows from held.
func RangeHeld(f *os.File, start, length int64) (held, known bool) {
	sys.Control(f, func(fd int) error {
		held, known = sys.OFDHeld(fd, start, length)
		return nil
	})
	return held, known
}

// A RangeHolder is the kernel's answer to "who holds a lock on these
// bytes": the one lock it names when several are held.
type RangeHolder struct {
	// Held is false when no other open file description holds a lock on
	// any byte of the range; the other fields are then zero.
	Held bool
	// Shared: the lock named is a shared one.
	Shared bool
	// Start and Len are the named lock's own range (Len 0: to the end of
	// the file and beyond), which may extend beyond the range asked about.
	Start, Len int64
	// Pid is -1 when the lock belongs to an open file description, which
	// no process owns (every lock this module takes); a process-owned
	// POSIX lock (fcntl F_SETLK, taken by some other program) names its
	// owner's pid, as the kernel sees it from our pid namespace.
	Pid int
}

// RangeHolderOf is RangeHeld with the kernel's description of the lock it
// found. An error matching ErrUnsupported: the platform or filesystem does
// not answer.
func RangeHolderOf(f *os.File, start, length int64) (RangeHolder, error) {
	var h RangeHolder
	err := sys.Control(f, func(fd int) (err error) {
		h, err = rangeHolder(fd, start, length)
		return err
	})
	if err != nil {
		return RangeHolder{}, rangeQueryError(f.Name(), err)
	}
	return h, nil
}

func rangeHolder(fd int, start, length int64) (RangeHolder, error) {
	lk, err := sys.OFDQuery(fd, start, length)
	return RangeHolder(lk), err
}

func rangeQueryError(path string, err error) error {
	if err == sys.ErrUnsupported {
		return &Error{Op: "getlk", Path: path, Code: CodeUnsupported, Err: err,
			Detail: "the filesystem cannot tell who holds an open-file-description lock"}
	}
	return wrap("getlk", path, err)
}

// A LockFD is a raw descriptor on a regular file's inode, for callers to
// whom an *os.File's setup (two more system calls) or its Control closure
// is the cost of their hot path: the range-lock calls on a bare number.
// Dir.OpenLockFD opens one read-only, to ask the kernel about the locks on
// that inode and to read it; the caller owns it and closes it with Close
// exactly once. LockFD(f.Fd()) borrows the descriptor of an *os.File the
// caller keeps open for as long as it uses the number. -1 is no
// descriptor. It is for the packages of this module; others use
// TryLockRange and its kin on an *os.File.
type LockFD int

// OpenLockFD opens the regular file name directly beneath d read-only as
// a LockFD, with the proofs of OpenFile in their cheapest form: an lstat
// first, so that a device or FIFO is never opened; a no-follow,
// non-blocking open; an fstat proving a regular file. ino is the inode it
// is open on. fd is -1 (and err says why) when name is not a regular file
// that could be opened.
func (d *Dir) OpenLockFD(name string) (fd LockFD, ino uint64, err error) {
	fd = -1
	err = d.use("open", func(dirfd int) error {
		st, err := sys.Lstat(dirfd, name)
		if err != nil {
			return err
		}
		if !st.Mode.IsRegular() {
			return errLockFDNotRegular
		}
		n, err := sys.Open(dirfd, name, os.O_RDONLY, 0)
		if err != nil {
			return err
		}
		if st, err = sys.Fstat(n); err != nil || !st.Mode.IsRegular() {
			sys.Close(n)
			if err == nil {
				err = errLockFDNotRegular
			}
			return err
		}
		fd, ino = LockFD(n), st.Ino
		return nil
	})
	return fd, ino, err
}

// errLockFDNotRegular is OpenLockFD's refusal of anything but a regular
// file; it carries no path, which would cost an allocation on a path whose
// callers take any refusal as "nothing to ask about".
var errLockFDNotRegular = errors.New("not a regular file")

// Close closes fd. fd must not be used again.
func (fd LockFD) Close() error {
	if fd < 0 {
		return nil
	}
	return sys.Close(int(fd))
}

// TryLock is TryLockRange through fd.
func (fd LockFD) TryLock(mode LockMode, start, length int64) (ok bool, err error) {
	return lockAnswer("", tryLockRange(int(fd), mode, start, length))
}

// Unlock is UnlockRange through fd.
func (fd LockFD) Unlock(start, length int64) error {
	return unlockAnswer("", sys.OFDUnlock(int(fd), start, length))
}

// Held is RangeHeld through fd.
func (fd LockFD) Held(start, length int64) (held, known bool) {
	if fd < 0 {
		return false, false
	}
	return sys.OFDHeld(int(fd), start, length)
}

// Holder is RangeHolderOf through fd.
func (fd LockFD) Holder(start, length int64) (RangeHolder, error) {
	if fd < 0 {
		return RangeHolder{}, &Error{Op: "getlk", Code: CodeInvalidRequest, Err: os.ErrClosed, Detail: "no descriptor"}
	}
	h, err := rangeHolder(int(fd), start, length)
	if err != nil {
		return RangeHolder{}, rangeQueryError("", err)
	}
	return h, nil
}

// Pread reads up to len(p) bytes at offset off through fd, in one system
// call: n < len(p) with a nil error is the end of the file.
func (fd LockFD) Pread(p []byte, off int64) (n int, err error) {
	return sys.Pread(int(fd), p, off)
}

// Stat is the fstat of fd, in the system's stat record (see Dir.LstatRaw).
func (fd LockFD) Stat() (RawStat, error) { return sys.Fstat(int(fd)) }
