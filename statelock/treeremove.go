package statelock

import (
	"errors"
	"io/fs"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
)

// treeRemoval is the exact removal of a directory tree that was judged
// removable (a crashed transition claim, a stale legacy F.lock/
// directory): the tree judged, and what the removal of that kind needs.
type treeRemoval struct {
	name   string
	judged *exactfs.Tree
	// guard: take the directory's reclaim guard first (guardTree), for a
	// removal that no transition claim serializes.
	guard bool
	// detached accepts what an interrupted removal of this kind leaves
	// at name+".removing" (replayDetached).
	detached func(*exactfs.Tree) bool
	// afterVerdict and beforeRemoval are the race hooks at the two windows.
	afterVerdict, beforeRemoval string
	// prepare, if set, is the last step before the removal, once the tree
	// is proved unchanged; ok false means something changed (look again).
	prepare func() (ok bool, err error)
}

// removeTree removes exactly the judged tree: under its guard when asked,
// it captures the tree again (it must be the tree judged, entry for entry:
// SPEC 4.5's bracket), finishes an interrupted removal at name.removing,
// runs prepare, and removes the tree by exact tree removal of the judged
// snapshot. A successor that replaced the tree in between survives.
//
// freed reports that name holds no tree any more. Not freed, blocked says
// what stands in the way that no automatic rule removes ("" when the tree
// changed or another remover is at it: look again). err is a filesystem
// error of this call only.
func (l *locker) removeTree(t treeRemoval) (freed bool, blocked string, err error) {
	if t.guard {
		release, held, err := l.guardTree(t.name, t.judged.Root())
		if err != nil || !held {
			return false, "", err
		}
		defer release()
	}
	hook.Fire(t.afterVerdict, l.path(t.name))
	// Held to the judged tree: whatever was planted since the look is
	// refused unread, however large.
	now, err := l.dir.RecaptureTree(t.name, t.judged)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, "", nil
	case err != nil || !sameTree(now, t.judged):
		return false, "", nil
	}
	if ok, blocked, err := l.replayDetached(t.name, t.detached); !ok || err != nil {
		return false, blocked, err
	}
	if t.prepare != nil {
		if ok, err := t.prepare(); !ok || err != nil {
			return false, "", err
		}
	}
	hook.Fire(t.beforeRemoval, l.path(t.name))
	if err := treeRemoved(l.dir.RemoveTreeExact(t.name, t.judged)); err != nil {
		return false, "", err
	}
	if _, err := l.dir.Lstat(t.name); err == nil {
		return false, "", nil // the removal lost a race and changed nothing
	}
	return true, "", nil
}
