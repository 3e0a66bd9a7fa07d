package sys

import "golang.org/x/sys/windows"

// OFDUnlock drops the byte-range lock fd's handle holds on exactly the
// bytes [start, start+length) (length 0 as for OFDLock): UnlockFileEx
// unlocks only a range exactly as it was locked, and fails otherwise.
func OFDUnlock(fd int, start, length int64) error {
	if !ready {
		return ErrUnsupported
	}
	ov, lo, hi, err := lockRange(start, length)
	if err != nil {
		return errnoOf(err)
	}
	return errnoOf(windows.UnlockFileEx(h(fd), 0, lo, hi, &ov))
}

// OFDReadLock takes a shared byte-range lock on [start, start+length)
// without waiting. Shared locks of several handles coexist; an exclusive
// lock conflicts with them. The Win32 error of a refusal is returned
// unchanged (ERROR_LOCK_VIOLATION: a conflicting lock is held).
func OFDReadLock(fd int, start, length int64) error {
	if !ready {
		return ErrUnsupported
	}
	return lockFile(fd, 0, start, length)
}

// OFDConflict: Windows cannot tell who holds a lock without taking it;
// nothing follows.
func OFDConflict(fd int, start, length int64) (held bool, lockStart int64, err error) {
	return false, 0, ErrUnsupported
}

// OFDTryLock is OFDLock with the Win32 error of a refusal returned
// unchanged, for a caller that reports what the filesystem said.
func OFDTryLock(fd int, start, length int64) error {
	if !ready {
		return ErrUnsupported
	}
	return lockFile(fd, windows.LOCKFILE_EXCLUSIVE_LOCK, start, length)
}
