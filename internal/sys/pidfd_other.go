//go:build !linux || exactfs_portable

package sys

// ExitFd: no pidfds here.
func ExitFd(pid int) (fd int, ino uint64, err error) { return -1, 0, ErrUnsupported }
