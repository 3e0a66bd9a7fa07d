package statelock

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/exactfs/exactfs/internal/sys"
	"golang.org/x/sys/unix"
)

// The claim directory is recycled rather than made and removed.
//
// mkdir and rmdir allocate and free an inode and a directory block; on some
// disks freeing the block is slow (on an ext4 volume mounted with discard
// on a virtual disk, rmdir of an empty directory costs 200–300 µs against
// 10 µs for a rename), and a lock cycle takes the claim twice. So a claim
// is given back by renaming the directory, without replace, to a private
// spare name beside it (sparePrefix + the claim's name), and the next taker
// renames the spare, without replace, onto the claim's name. Every peer
// sees exactly what mkdir and rmdir show it: the name F.lock.transition
// appears as an empty 0700 directory, for one taker only (the rename fails
// with EEXIST for everyone else), and disappears atomically. mkdir and
// rmdir remain the fallback: no spare yet, a spare that is not an empty
// directory of ours, a spare name already taken, or a filesystem without
// no-replace rename.
//
// A spare is an empty directory with a private name (TypeScript
// peers skip ".gjc-delete-*" names). Any process may remove an empty one at
// any time; its next taker then makes the claim with mkdir.

// errNoSpare: no usable spare; make the claim with mkdir.
var errNoSpare = errors.New("no usable spare claim directory")

// makeClaim takes the claim directory F.lock.transition, 0700: from the
// spare when there is a usable one, else with mkdir. A claim held by
// someone else comes back as an error satisfying errors.Is(err,
// fs.ErrExist).
func (l *locker) makeClaim() error {
	if l.spare != "" {
		err := l.takeSpare()
		if err == nil || errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return l.mkdirClaim()
}

// takeSpare renames the spare onto the claim's name. The spare must be an
// empty directory with mode 0700 that we may set the times of (its owner,
// or root) before it is moved (looked at through a descriptor: a symlink,
// FIFO or file there is never opened or moved), and the claim must be that
// same directory after; a spare swapped in between is put back where it
// was and the claim is made with mkdir.
//
// Its times are set to now before the rename: a claim's age is its
// directory's mtime (nobody judges a claim younger than claimMinAge), and a
// spare's mtime is that of its last use, which may be long ago.
func (l *locker) takeSpare() error {
	dirfd := l.dir.Fd()
	fd, err := unix.Openat(dirfd, l.spare, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return errNoSpare
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&0o7777 != 0o700 || !emptyDir(fd, false) || touch(fd) != nil {
		unix.Close(fd)
		return errNoSpare
	}
	switch err := sys.RenameNoReplace(dirfd, l.spare, dirfd, l.claim); err {
	case nil:
	case unix.EEXIST:
		unix.Close(fd)
		return &fs.PathError{Op: "mkdir", Path: l.path(l.claim), Err: err}
	default:
		// ENOENT: another taker has it (the mkdir will meet its claim);
		// EINVAL: no such rename here.
		unix.Close(fd)
		return errNoSpare
	}
	var got unix.Stat_t
	if err := unix.Fstatat(dirfd, l.claim, &got, unix.AT_SYMLINK_NOFOLLOW); err != nil || got.Dev != st.Dev || got.Ino != st.Ino {
		unix.Close(fd)
		// The spare was swapped after we looked: what we moved is somebody
		// else's. The claim's name is ours (the rename admitted only us), so
		// nobody else moves it back first.
		if rerr := sys.RenameNoReplace(dirfd, l.claim, dirfd, l.spare); rerr != nil {
			return &initError{fmt.Errorf("%s was replaced while it was being taken as the transition claim, "+
				"and putting it back failed (%v); it is now at %s: remove it after checking what it is",
				l.path(l.spare), rerr, l.path(l.claim))}
		}
		return errNoSpare
	}
	l.held = claimDir{fd: fd, dev: uint64(st.Dev), ino: st.Ino}
	return nil
}

// touch sets the times of the file open at fd to now (futimens).
func touch(fd int) error {
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, 0, 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// mkdirClaim makes the claim directory with mkdir and opens it. mkdir's
// mode is masked by the umask, so a mode other than exactly 0700 is fixed
// through the descriptor.
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
		if err := l.dir.Mkdir(l.claim, 0o700); err != nil {
			return err
		}
	}
	fd, err := unix.Openat(dirfd, l.claim, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "mkdir", Path: l.path(l.claim), Err: err}
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	if err == nil && st.Mode&0o7777 != 0o700 {
		err = unix.Fchmod(fd, 0o700)
	}
	if err != nil {
		unix.Close(fd)
		return &fs.PathError{Op: "mkdir", Path: l.path(l.claim), Err: err}
	}
	l.held = claimDir{fd: fd, dev: uint64(st.Dev), ino: st.Ino}
	l.replayDue = true
	return nil
}

// dropClaim gives the claim directory back: renamed to the spare name when
// it is still the directory we took and still empty, else removed by
// rmdir (which refuses a directory someone wrote into: a loud error, and
// the claim stays for Recover). A claim name that no longer names our
// directory is left alone.
func (l *locker) dropClaim() error {
	c := l.held
	l.held = claimDir{fd: -1}
	if c.fd < 0 {
		return l.dir.Rmdir(l.claim)
	}
	defer unix.Close(c.fd)
	dirfd := l.dir.Fd()
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, l.claim, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "release the transition claim", Path: l.path(l.claim), Err: err}
	}
	if uint64(st.Dev) != c.dev || st.Ino != c.ino {
		return fmt.Errorf("%s is no longer the directory we took as the transition claim (inode %d, now %d); left alone",
			l.path(l.claim), c.ino, st.Ino)
	}
	if l.spare != "" && emptyDir(c.fd, true) && sys.RenameNoReplace(dirfd, l.claim, dirfd, l.spare) == nil {
		return nil
	}
	return l.dir.Rmdir(l.claim)
}

// emptyDir reports whether the directory open at fd has no entries besides
// "." and "..". rewind: fd was read before; read it from the start.
func emptyDir(fd int, rewind bool) bool {
	if rewind {
		if _, err := unix.Seek(fd, 0, 0); err != nil {
			return false
		}
	}
	var buf [512]byte
	for {
		n, err := unix.Getdents(fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false
		}
		if n == 0 {
			return true
		}
		if _, k, _ := unix.ParseDirent(buf[:n], 1, nil); k > 0 {
			return false
		}
	}
}

func (l *locker) closeClaim() {
	if l.held.fd >= 0 {
		unix.Close(l.held.fd)
		l.held.fd = -1
	}
}
