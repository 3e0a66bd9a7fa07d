package sys

import "golang.org/x/sys/unix"

// TouchNow sets the access and modification times of the file open at fd
// to now: futimens(fd, NULL), as utimensat(fd, NULL, NULL, 0).
func TouchNow(fd int) error {
	return retry(func() error {
		_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, 0, 0, 0, 0)
		if e != 0 {
			return e
		}
		return nil
	})
}

// DirEmpty reads the directory open at fd from its current offset with
// getdents and reports whether it holds no entry besides "." and "..". It
// stops at the first other entry. The errno of a failed read is returned
// unchanged.
func DirEmpty(fd int) (bool, error) {
	var buf [512]byte
	for {
		var n int
		err := retry(func() (err error) {
			n, err = unix.Getdents(fd, buf[:])
			return err
		})
		if err != nil {
			return false, err
		}
		if n == 0 {
			return true, nil
		}
		if _, k, _ := unix.ParseDirent(buf[:n], 1, nil); k > 0 {
			return false, nil
		}
	}
}

// MonotonicNs reads the host-wide monotonic clock (CLOCK_MONOTONIC), in
// nanoseconds: the same clock in every process of the host.
func MonotonicNs() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}
