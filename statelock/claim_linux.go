//go:build !exactfs_portable

package statelock

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/exactfs/exactfs"
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

// takeSpare renames the spare onto the claim's name: the root's exact
// move of an empty directory (Dir.MoveEmptyDir). The spare must be an
// empty directory with mode 0700 that we may trust (trust.go: another
// uid's, whose owner could rename it away from under a claim, is passed
// over); it is looked at through a descriptor (a symlink, FIFO or file
// there is never opened or moved), and the claim must be that same
// directory after the rename; a spare swapped in between is put back where
// it was and the claim is made with mkdir.
//
// Its times are set to now before the rename (MoveEmptyDir does): a
// claim's age is its directory's mtime (nobody judges a claim younger than
// claimMinAge), and a spare's mtime is that of its last use, which may be
// long ago.
func (l *locker) takeSpare() error {
	c, err := l.dir.MoveEmptyDir(l.spare, l.claim, func(st exactfs.RawStat) bool { return l.distrust(st, true) == "" })
	switch {
	case err == nil:
		l.held = c
		return nil
	case errors.Is(err, exactfs.ErrRestoreFailed):
		// The spare was swapped after it was proved: what moved is
		// somebody else's, and it could not be put back.
		return &initError{fmt.Errorf("%s was replaced while it was being taken as the transition claim, "+
			"and putting it back failed (%v); it is now at %s: remove it after checking what it is",
			l.path(l.spare), errors.Unwrap(err), l.path(l.claim))}
	case errors.Is(err, exactfs.ErrDestinationExists):
		return &fs.PathError{Op: "mkdir", Path: l.path(l.claim), Err: syscall.EEXIST}
	}
	// No spare, one that is not an empty directory of ours, one swapped
	// and put back, another taker's (ENOENT: the mkdir will meet its
	// claim), or no such rename here.
	return errNoSpare
}

// mkdirClaim makes the claim directory with mkdir, mode exactly 0700
// (Dir.CreateDir: the umask does not apply), and holds it open.
func (l *locker) mkdirClaim() error {
	c, err := l.dir.CreateDir(l.claim, 0o700)
	if errors.Is(err, exactfs.ErrDestinationExists) {
		return &fs.PathError{Op: "mkdir", Path: l.path(l.claim), Err: syscall.EEXIST}
	}
	if err != nil {
		return err
	}
	// Root in another uid's directory: the claim (and so the spare it
	// becomes) is the directory owner's (trust_unix.go).
	if err := l.chownForDir(c.Chown); err != nil {
		c.Close()
		return &fs.PathError{Op: "mkdir", Path: l.path(l.claim), Err: err}
	}
	l.held = c
	l.replayDue = true
	return nil
}

// dropClaim gives the claim directory back: renamed to the spare name when
// it is still the directory we took and still empty (Dir.MoveHeldDir),
// else removed by rmdir (which refuses a directory someone wrote into: a
// loud error, and the claim stays for Recover). A claim name that no
// longer names our directory is left alone.
func (l *locker) dropClaim() error {
	c := l.held
	l.held = nil
	if c == nil {
		return l.dir.Rmdir(l.claim)
	}
	defer c.Close()
	moved, err := l.dir.MoveHeldDir(c, l.claim, l.spare)
	switch {
	case errors.Is(err, exactfs.ErrIdentityMismatch):
		return fmt.Errorf("%s is no longer the directory we took as the transition claim: %w; left alone", l.path(l.claim), err)
	case err != nil:
		return &fs.PathError{Op: "release the transition claim", Path: l.path(l.claim), Err: err}
	case moved:
		return nil
	}
	return l.dir.Rmdir(l.claim)
}

func (l *locker) closeClaim() {
	if l.held != nil {
		l.held.Close()
		l.held = nil
	}
}
