//go:build !exactfs_portable

package statelock

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/exactfs/exactfs/internal/sys"
)

// The claim directory is recycled rather than made and removed.
//
// mkdir and rmdir allocate and free an inode and a directory block; on some
// disks freeing the block is slow (on an ext4 volume mounted with discard
// on a virtual disk, rmdir of an empty directory costs 200–300 µs against
// 10 µs for a rename), and a lock cycle takes the claim twice. So a claim
// is given back by renaming the directory, without replace, to a private
// spare name beside it (exactfs.SparePrefix + the claim's name), and the next taker
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
func (l *locker) takeSpare() error { return l.dir.Use(l.takeSpareAt) }

// takeSpareAt is takeSpare on the lock directory open at dirfd.
func (l *locker) takeSpareAt(dirfd int) error {
	fd, err := sys.OpenDir(dirfd, l.spare)
	if err != nil {
		return errNoSpare
	}
	st, err := sys.Fstat(fd)
	// A spare that is not ours to trust (trust.go: another uid's, whose
	// owner could rename it away from under a claim) is passed over.
	if err != nil || l.distrust(st, true) != "" || !emptyDir(fd, false) || sys.TouchNow(fd) != nil {
		sys.Close(fd)
		return errNoSpare
	}
	switch err := sys.RenameNoReplace(dirfd, l.spare, dirfd, l.claim); err {
	case nil:
	case syscall.EEXIST:
		sys.Close(fd)
		return &fs.PathError{Op: "mkdir", Path: l.path(l.claim), Err: err}
	default:
		// ENOENT: another taker has it (the mkdir will meet its claim);
		// EINVAL: no such rename here.
		sys.Close(fd)
		return errNoSpare
	}
	if got, err := sys.Lstat(dirfd, l.claim); err != nil || got.Dev != st.Dev || got.Ino != st.Ino {
		sys.Close(fd)
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
	l.held = claimDir{fd: fd, dev: st.Dev, ino: st.Ino}
	return nil
}

// mkdirClaim makes the claim directory with mkdir and opens it. mkdir's
// mode is masked by the umask, so a mode other than exactly 0700 is fixed
// through the descriptor.
func (l *locker) mkdirClaim() error { return l.dir.Use(l.mkdirClaimAt) }

// mkdirClaimAt is mkdirClaim on the lock directory open at dirfd.
func (l *locker) mkdirClaimAt(dirfd int) error {
	switch err := sys.Mkdir(dirfd, l.claim, 0o700); err {
	case nil:
	case syscall.EEXIST:
		return &fs.PathError{Op: "mkdir", Path: l.path(l.claim), Err: err}
	default:
		if err := l.dir.Mkdir(l.claim, 0o700); err != nil {
			return err
		}
	}
	fd, err := sys.OpenDir(dirfd, l.claim)
	if err != nil {
		return &fs.PathError{Op: "mkdir", Path: l.path(l.claim), Err: err}
	}
	st, err := sys.Fstat(fd)
	if err == nil && sys.PermBits(st.Mode) != 0o700 {
		err = sys.Fchmod(fd, 0o700)
	}
	if err == nil {
		// Root in another uid's directory: the claim (and so the spare it
		// becomes) is the directory owner's (trust_unix.go).
		err = l.chownForDir(fd)
	}
	if err != nil {
		sys.Close(fd)
		return &fs.PathError{Op: "mkdir", Path: l.path(l.claim), Err: err}
	}
	l.held = claimDir{fd: fd, dev: st.Dev, ino: st.Ino}
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
	defer sys.Close(c.fd)
	return l.dir.Use(func(dirfd int) error { return l.dropClaimAt(dirfd, c) })
}

// dropClaimAt is dropClaim of the claim c on the lock directory open at
// dirfd.
func (l *locker) dropClaimAt(dirfd int, c claimDir) error {
	st, err := sys.Lstat(dirfd, l.claim)
	if err != nil {
		return &fs.PathError{Op: "release the transition claim", Path: l.path(l.claim), Err: err}
	}
	if st.Dev != c.dev || st.Ino != c.ino {
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
	if rewind && sys.Seek(fd, 0) != nil {
		return false
	}
	empty, err := sys.DirEmpty(fd)
	return err == nil && empty
}

func (l *locker) closeClaim() {
	if l.held.fd >= 0 {
		sys.Close(l.held.fd)
		l.held.fd = -1
	}
}
