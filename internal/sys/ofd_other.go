//go:build unix && (!linux || exactfs_portable)

package sys

// OFDLock: this platform has no open-file-description locks.
func OFDLock(fd int, start, length int64) error { return ErrUnsupported }

// OFDHeld: this platform cannot answer; nothing follows.
func OFDHeld(fd int, start, length int64) (held, known bool) { return false, false }

// OFDSharedLock: this platform has no open-file-description locks.
func OFDSharedLock(fd int, start, length int64) error { return ErrUnsupported }

// OFDQuery: this platform cannot answer; nothing follows.
func OFDQuery(fd int, start, length int64) (RangeLock, error) { return RangeLock{}, ErrUnsupported }
