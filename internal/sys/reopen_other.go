//go:build (!linux || exactfs_portable) && !windows

package sys

// Reopen: there is no way here to open a file once more from its
// descriptor that is known not to share the descriptor's locks (macOS's
// /dev/fd duplicates the descriptor).
func Reopen(fd int) (int, error) { return -1, ErrUnsupported }
