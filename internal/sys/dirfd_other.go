//go:build !linux

package sys

// MonotonicNs: exactfs reads the host-wide monotonic clock only to order
// the waiters of an open-file-description lock queue, which exists only on
// Linux.
func MonotonicNs() (int64, error) { return 0, ErrUnsupported }
