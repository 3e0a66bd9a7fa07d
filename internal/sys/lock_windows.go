package sys

// ErrWouldBlock is the error of a lock request that would have to wait.
var ErrWouldBlock = ErrUnsupported

// TryFlock fails closed: see the package doc.
func TryFlock(fd int) error { return ErrUnsupported }
