package sys

import "errors"

// ErrWouldBlock is the error of a lock request that would have to wait
// (never returned here: every lock call fails with ErrUnsupported).
var ErrWouldBlock = errors.New("the lock request would block")

// TryFlock fails closed: see the package doc.
func TryFlock(fd int) error { return ErrUnsupported }

// OFDLock fails closed: see the package doc.
func OFDLock(fd int, start, length int64) error { return ErrUnsupported }

// OFDHeld cannot answer on Windows; nothing follows.
func OFDHeld(fd int, start, length int64) (held, known bool) { return false, false }
