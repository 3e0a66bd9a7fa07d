//go:build !exactfs_portable

package sys

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// Reopen opens the file fd is open on once more, read-only: a new open
// file description of the same inode (through /proc/self/fd, which names
// the inode even when its name is gone or another file's), never a dup of
// fd, so it shares none of fd's open-file-description locks. The inode is
// proved the same by an fstat of both. ErrUnsupported: /proc is not there
// or names something else.
func Reopen(fd int) (int, error) {
	var want unix.Stat_t
	if err := unix.Fstat(fd, &want); err != nil {
		return -1, err
	}
	if want.Mode&unix.S_IFMT != unix.S_IFREG {
		return -1, unix.EINVAL
	}
	n, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if err == unix.ENOENT {
		return -1, ErrUnsupported
	}
	if err != nil {
		return -1, err
	}
	var got unix.Stat_t
	if err := unix.Fstat(n, &got); err != nil || got.Dev != want.Dev || got.Ino != want.Ino {
		unix.Close(n)
		return -1, ErrUnsupported
	}
	return n, nil
}
