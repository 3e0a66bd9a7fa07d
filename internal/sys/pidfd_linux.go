//go:build !exactfs_portable

package sys

import "golang.org/x/sys/unix"

// ExitFd opens a pidfd of pid that becomes readable when the process
// exits (Linux 5.3), non-blocking, so that the runtime's poller can wait
// on it, and reports the inode it names: under pidfs (Linux 6.9) one
// inode per process of the boot, the number a Go cohort record carries as
// pidfd_ino, so a caller can tell the process it meant from a later one
// that got its pid.
func ExitFd(pid int) (fd int, ino uint64, err error) {
	fd, err = unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return -1, 0, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, 0, err
	}
	return fd, st.Ino, nil
}
