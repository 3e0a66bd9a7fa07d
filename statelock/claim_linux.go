package statelock

import (
	"io/fs"

	"golang.org/x/sys/unix"
)

// mkdirClaim makes the claim directory F.lock.transition with mode exactly
// 0700 (SPEC §4.3); an existing one comes back as an error satisfying
// errors.Is(err, fs.ErrExist).
//
// Dir.Mkdir makes the directory, opens it and fchmods it to the mode, so
// that a umask or a set-group-id parent cannot change it: four system
// calls. Nearly always the mode is already right (a umask never clears the
// owner's bits in practice), so this makes it in the lock directory we
// hold and looks with one lstat; only when the mode is not exactly 0700 is
// it fixed the same way. Nobody judges, removes or replaces a claim younger
// than claimMinAge, so the lstat sees the directory our mkdir made. Any
// failure other than "exists" is left to Dir.Mkdir, so errors keep its
// codes.
func (l *locker) mkdirClaim() error {
	dirfd := l.dir.Fd()
	var err error
	for {
		if err = unix.Mkdirat(dirfd, l.claim, 0o700); err != unix.EINTR {
			break
		}
	}
	switch err {
	case nil:
	case unix.EEXIST:
		return &fs.PathError{Op: "mkdir", Path: l.path(l.claim), Err: err}
	default:
		return l.dir.Mkdir(l.claim, 0o700)
	}
	var st unix.Stat_t
	if unix.Fstatat(dirfd, l.claim, &st, unix.AT_SYMLINK_NOFOLLOW) == nil &&
		st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Mode&0o7777 == 0o700 {
		return nil
	}
	fd, err := unix.Openat(dirfd, l.claim, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "mkdir", Path: l.path(l.claim), Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Fchmod(fd, 0o700); err != nil {
		return &fs.PathError{Op: "mkdir", Path: l.path(l.claim), Err: err}
	}
	return nil
}
