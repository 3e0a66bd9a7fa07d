//go:build (!linux || exactfs_portable) && !windows

package sys

// OFDUnlock: this platform has no open-file-description locks.
func OFDUnlock(fd int, start, length int64) error { return ErrUnsupported }

// OFDReadLock: this platform has no open-file-description locks.
func OFDReadLock(fd int, start, length int64) error { return ErrUnsupported }

// OFDConflict: this platform cannot answer; nothing follows.
func OFDConflict(fd int, start, length int64) (held bool, lockStart int64, err error) {
	return false, 0, ErrUnsupported
}

// OFDTryLock: this platform has no open-file-description locks.
func OFDTryLock(fd int, start, length int64) error { return ErrUnsupported }
