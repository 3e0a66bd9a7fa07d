package exactfs

import (
	"errors"
	"os"

	"github.com/exactfs/exactfs/internal/sys"
)

// TryLock takes an exclusive lock on the open directory d without waiting:
// ok is false when another Dir, in this process or another, holds it. The
// lock lasts until d is closed; a holder that dies, TerminateProcess
// included, loses it with its handles (the kernel releases byte-range
// locks of a handle it closes).
//
// Windows locks no directory: flock does not exist, and LockFileEx refuses
// a directory handle. So the lock is LockFileEx (exclusive,
// LOCKFILE_FAIL_IMMEDIATELY) on byte 0 of DirLockName, an empty private
// file inside the directory, opened through d without following a link,
// proved a regular file, and made on first use. The store's commit rule
// needs exactly what this gives: every store writer and reaper of one
// directory, in any process, takes the same lock on the same file, found
// by the same name beneath the directory it writes in, and holds it on a
// handle of its own (so two Dirs of one process exclude each other, as
// two flock descriptions do). Windows byte-range locks are mandatory, but
// nobody reads the file, so none is blocked. Across SMB the lock is the
// server's, so every client sees it.
//
// What this costs, and why not otherwise: the file is never removed
// (removing a lock file others may hold open would let two holders lock
// two files), so a directory locked once is never empty again; do not
// lock a directory that must be removed empty. The file is a private name
// (ClassifyName: NameDirLock), hidden from the store's List. A named
// kernel object keyed by the directory's identity was not used: a mutex
// belongs to a thread, not to a Go caller, and is re-entrant within it;
// a semaphore is not released when its holder dies; and neither is seen
// across machines or sessions.
func (d *Dir) TryLock() (ok bool, err error) {
	d.mu.Lock()
	held := d.lockf != nil && !d.closed
	d.mu.Unlock()
	if held {
		// flock again on the same description succeeds; so does this.
		return true, nil
	}
	f, err := d.OpenFile(DirLockName, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return false, err
	}
	err = sys.Control(f, func(fd int) error { return sys.OFDLock(fd, 0, 1) })
	if errors.Is(err, sys.ErrWouldBlock) {
		f.Close()
		return false, nil
	}
	if err != nil {
		f.Close()
		return false, wrap("lock", d.join(DirLockName), err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.closed:
		// Close raced the lock: it must not outlive d.
		f.Close()
		return false, &Error{Op: "lock", Path: d.path, Code: CodeInvalidRequest, Err: os.ErrClosed,
			Detail: "the directory handle " + d.path + " was closed"}
	case d.lockf != nil:
		// Another call on d locked first. (Unreachable: this handle's
		// lock would have conflicted with it.)
		f.Close()
	default:
		d.lockf = f
	}
	return true, nil
}
