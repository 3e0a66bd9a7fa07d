//go:build !darwin || exactfs_portable

package wake

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/internal/sys"
)

// Watch sleeps between a waiter's attempts but wakes early when the owner record
// changes. It watches the inode of F.lock itself with inotify: a reclaim
// moves or deletes the inode (IN_MOVE_SELF, IN_DELETE_SELF, IN_ATTRIB for
// the link count), and the two closes that matter to a queued waiter are
// told apart by where it stands:
//   - the first waiter in the queue waits for the release, which ends with
//     the holder closing its written descriptor (IN_CLOSE_WRITE);
//   - a waiter behind it waits to become first, which happens when a waiter
//     ahead leaves the queue by closing its read-only ticket
//     (IN_CLOSE_NOWRITE; Queue.Drop drops the ticket's lock first).
//
// So a release wakes one waiter, not all of them: on a busy lock the
// process that releases usually takes the lock again at once (Queue),
// and every waiter woken for nothing costs a wake-up of its process. New
// callers look at F.lock through a shared descriptor (lookProbe) so that
// they close nothing. Watching the inode rather than the directory means
// the traffic of everything else in the directory (claims, sidecars, the
// state file's own staging) wakes nobody. Before each sleep the watch is
// moved to whatever inode F.lock names now; when there is none, the
// directory is watched for the name to appear.
//
// The watch is an optimization only: every sleep is still bounded by the
// backoff, so a missed or coalesced event costs at most 100 ms. And an
// event is only a hint: inotify does not say who caused it, and a waiter's
// own failed attempt closes F.lock (read-write on the fast path, which
// finds a live record instead of a tombstone; read-only to judge it), as
// do other waiters and every TypeScript peer that polls. So a woken waiter
// first compares what it observes of F.lock and of the queue with what it
// observed just before its last attempt (observation), and when nothing
// changed it sleeps on to the same deadline (acquisition.wait). Without
// that, a waiter on a holder that holds no kernel lock of ours (the
// attempt is made in full each time) woke itself at once after every
// attempt and used a whole core.
//
// Where there is no inotify (every platform but Linux), internal/sys's
// InotifyInit fails, NewWatch returns nil, and every wait is a timed sleep;
// except on macOS, whose waker is kqueue (watch_darwin.go, kqueue.go).
type Watch struct {
	f      *os.File
	fd     int
	path   string
	dir    string
	name   []byte
	fileWd int
	dirWd  int
	mask   uint32 // the file watch's mask
}

const (
	inodeMask  = sys.InMoveSelf | sys.InDeleteSelf | sys.InAttrib | sys.InDontFollow
	firstMask  = inodeMask | sys.InCloseWrite
	behindMask = inodeMask | sys.InCloseNowrite
	dirMask    = sys.InCreate | sys.InMovedTo | sys.InOnlyDir | sys.InDontFollow
)

// NewWatch prepares a watch of dirPath/name. It returns nil when inotify
// is unavailable, or off is set (then waits are plain timed sleeps: the
// no-inotify path of every Mac, and of a Linux whose inotify_init1 fails,
// e.g. with max_user_instances spent, which tests run on Linux).
func NewWatch(dirPath, name string, off bool) *Watch {
	if off {
		return nil
	}
	fd, err := sys.InotifyInit()
	if err != nil {
		return nil
	}
	return &Watch{f: os.NewFile(uintptr(fd), "inotify"), fd: fd, path: filepath.Join(dirPath, name),
		dir: dirPath, name: []byte(name), fileWd: -1, dirWd: -1}
}

// arm points the watch at the inode F.lock names now (IN_DONT_FOLLOW: a
// symlink there is watched as itself, never followed) with mask, or at the
// directory when the name is free. It reports whether what is watched
// changed: another inode, or another mask.
func (w *Watch) arm(mask uint32) (changed bool) {
	wd, err := sys.InotifyAddWatch(w.fd, w.path, mask)
	if err == nil {
		changed = wd != w.fileWd || mask != w.mask
		if w.fileWd >= 0 && w.fileWd != wd {
			sys.InotifyRmWatch(w.fd, w.fileWd)
		}
		w.fileWd, w.mask = wd, mask
		if w.dirWd >= 0 {
			sys.InotifyRmWatch(w.fd, w.dirWd)
			w.dirWd = -1
		}
		return changed
	}
	if w.dirWd < 0 {
		if wd, err := sys.InotifyAddWatch(w.fd, w.dir, dirMask); err == nil {
			w.dirWd = wd
			return true
		}
	}
	return false
}

// Wait sleeps for at most d, returning early (true) when F.lock changed,
// or with ctx's error when ctx is done. first says which close wakes this
// waiter (see Watch). When the watch has just moved to another inode or
// mask it returns at once: what happened before the new watch existed made
// no event for it, so the caller looks again.
func (w *Watch) Wait(ctx context.Context, d time.Duration, first bool) (bool, error) {
	if w == nil {
		return false, Sleep(ctx, d)
	}
	mask := uint32(behindMask)
	if first {
		mask = firstMask
	}
	if w.arm(mask) {
		// A new watch saw nothing of what happened before it: look again
		// before sleeping.
		return true, nil
	}
	deadline := time.Now().Add(d)
	if err := w.f.SetReadDeadline(deadline); err != nil {
		return false, Sleep(ctx, d)
	}
	stop := context.AfterFunc(ctx, func() { w.f.SetReadDeadline(time.Now()) })
	defer stop()
	var buf [4096]byte
	for {
		n, err := w.f.Read(buf[:])
		if cerr := ctx.Err(); cerr != nil {
			return false, cerr
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return w.lastLook(buf[:]), nil
		}
		if err != nil {
			// The watch broke; fall back to sleeping out the rest.
			return false, Sleep(ctx, time.Until(deadline))
		}
		if w.matches(buf[:n]) {
			return true, nil
		}
	}
}

// lastLook reads, without waiting, an event that arrived with the deadline
// (the read that timed out may have raced it): a waiter woken by the
// deadline and by an event at once was woken by the event.
func (w *Watch) lastLook(buf []byte) bool {
	hook.Fire(hook.LockWaitDeadline, w.path)
	if n, err := sys.InotifyReadNow(w.fd, buf); err == nil && w.matches(buf[:n]) {
		return true
	}
	hook.Fire(hook.LockWaitTimedOut, w.path)
	return false
}

// matches reports whether any event in buf concerns F.lock: any event of
// the file watch, or a directory event naming it.
func (w *Watch) matches(buf []byte) bool {
	for {
		wd, mask, name, rest, ok := sys.NextInotifyEvent(buf)
		if !ok {
			return false
		}
		switch {
		case mask&sys.InQOverflow != 0:
			return true
		case wd == w.fileWd && mask&sys.InIgnored == 0:
			return true
		case wd == w.dirWd && bytes.Equal(name, w.name):
			return true
		}
		buf = rest
	}
}

func (w *Watch) Close() {
	if w != nil {
		w.f.Close()
	}
}
