package sys

import "golang.org/x/sys/unix"

// BirthTime returns the birth (creation) time of the file fd is open on, in
// nanoseconds since the epoch, from statx(STATX_BTIME). ok is false when
// the filesystem keeps or reports no birth time (the kernel leaves
// STATX_BTIME out of the mask it returns) or the kernel has no statx
// (before Linux 4.11): then nothing follows from it.
func BirthTime(fd int) (ns int64, ok bool, err error) {
	var stx unix.Statx_t
	err = retry(func() error {
		return unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_SYNC_AS_STAT, unix.STATX_BTIME|unix.STATX_MTIME, &stx)
	})
	switch {
	case err == unix.ENOSYS || err == unix.EINVAL:
		return 0, false, nil
	case err != nil:
		return 0, false, err
	case stx.Mask&unix.STATX_BTIME == 0:
		return 0, false, nil
	}
	return stx.Btime.Sec*1e9 + int64(stx.Btime.Nsec), true, nil
}
