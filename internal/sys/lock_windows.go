package sys

import (
	"errors"
	"math"

	"golang.org/x/sys/windows"
)

// ErrWouldBlock is the error of a lock request that would have to wait:
// another handle holds a conflicting byte-range lock (ERROR_LOCK_VIOLATION).
var ErrWouldBlock = errors.New("the lock request would block")

// flockByte is the one byte TryFlock locks: far beyond any file's
// content, and beyond every other lock range of the module (the
// attestation's [2^39, 2^40), the queues above 2^40).
const flockByte = 1 << 62

// TryFlock stands in for flock(LOCK_EX|LOCK_NB) on a regular file: an
// exclusive LockFileEx, without waiting, on the one byte flockByte.
// ErrWouldBlock: another handle, in this process or another, holds it.
// Like flock's, the lock belongs to fd's handle (and its duplicates) and
// goes when the last of them is closed or its process dies,
// TerminateProcess included. Windows byte-range locks are mandatory, not
// advisory: a lock blocks other handles' reads and writes of its bytes,
// so it lies where nobody reads, and meets no other lock range of the
// module, as flock meets no fcntl lock on Linux. Unlike flock, locking
// again through the handle that holds it fails (ErrWouldBlock).
//
// A directory is refused (ErrUnsupported): LockFileEx takes no lock on a
// directory handle (exactfs's Dir.TryLock locks a file inside the
// directory instead).
func TryFlock(fd int) error {
	if !ready {
		return ErrUnsupported
	}
	st, err := fstat(fd)
	if err != nil {
		return err
	}
	if !st.Mode.IsRegular() {
		return ErrUnsupported
	}
	return OFDLock(fd, flockByte, 1)
}

// lockRange converts [start, start+length) (length 0: to the end of the
// file and beyond, as for fcntl) to LockFileEx's offset and length. The
// same arguments always give the same range, which UnlockFileEx needs:
// it unlocks only a range exactly as it was locked.
func lockRange(start, length int64) (ov windows.Overlapped, lo, hi uint32, err error) {
	if start < 0 || length < 0 {
		return ov, 0, 0, windows.ERROR_INVALID_PARAMETER
	}
	n := uint64(length)
	if length == 0 {
		n = math.MaxUint64 - uint64(start)
	}
	ov.Offset, ov.OffsetHigh = uint32(start), uint32(uint64(start)>>32)
	return ov, uint32(n), uint32(n >> 32), nil
}

func lockFile(fd int, flags uint32, start, length int64) error {
	ov, lo, hi, err := lockRange(start, length)
	if err != nil {
		return errnoOf(err)
	}
	return windows.LockFileEx(h(fd), flags|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, lo, hi, &ov)
}

// OFDLock takes an exclusive byte-range lock (LockFileEx) on the bytes
// [start, start+length) of the file fd is open on (length 0: to the end of
// the file and beyond), without waiting. ErrWouldBlock: another handle,
// in this process or another, holds a conflicting lock. ErrUnsupported:
// the file or filesystem takes no such locks.
//
// Unlike the Linux lock of the same name, a Windows byte-range lock is
// mandatory: while it is held, reads and writes of the locked bytes
// through any other handle fail. Lock only bytes no reader needs, for
// example a range beyond any record's end. The lock belongs to the handle
// (and its duplicates) in this process; closing the handle or the death
// of the process, TerminateProcess included, releases it.
func OFDLock(fd int, start, length int64) error {
	return tryLockRange(fd, windows.LOCKFILE_EXCLUSIVE_LOCK, start, length)
}

// tryLockRange takes a byte-range lock (LockFileEx with flags, fail
// immediately added) on [start, start+length), its errors sorted into
// ErrWouldBlock and ErrUnsupported.
func tryLockRange(fd int, flags uint32, start, length int64) error {
	if !ready {
		return ErrUnsupported
	}
	switch err := lockFile(fd, flags, start, length); err {
	case nil:
		return nil
	case windows.ERROR_LOCK_VIOLATION, windows.ERROR_IO_PENDING:
		return ErrWouldBlock
	case windows.ERROR_NOT_SUPPORTED, windows.ERROR_INVALID_FUNCTION:
		return ErrUnsupported
	default:
		return errnoOf(err)
	}
}

// OFDHeld cannot answer on Windows: there is no F_GETLK, and a probe would
// have to take the lock for a moment, which the holder could see as a
// conflict. Nothing follows (known is false).
func OFDHeld(fd int, start, length int64) (held, known bool) { return false, false }

// OFDSharedLock takes a shared byte-range lock (LockFileEx without
// LOCKFILE_EXCLUSIVE_LOCK) on [start, start+length) without waiting.
// Shared locks of several handles coexist; an exclusive one conflicts with
// them. ErrWouldBlock and ErrUnsupported mean what they mean for OFDLock.
// Like every Windows byte-range lock it is mandatory for writes: while it
// is held, no handle writes the locked bytes.
func OFDSharedLock(fd int, start, length int64) error { return tryLockRange(fd, 0, start, length) }

// OFDQuery cannot answer on Windows, for the reason OFDHeld cannot:
// there is no F_GETLK.
func OFDQuery(fd int, start, length int64) (RangeLock, error) { return RangeLock{}, ErrUnsupported }
