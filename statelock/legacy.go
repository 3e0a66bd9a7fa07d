package statelock

import (
	"errors"
	"io/fs"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
)

// sameTree reports whether two tree snapshots describe the same directory
// down to every entry: the root's identity and each entry's path, kind,
// inode, link count, size, times and digest. A successor that recreated the
// path has another root inode; one that reused it differs in some entry.
func sameTree(a, b *exactfs.Tree) bool {
	if a == nil || b == nil || len(a.Entries) != len(b.Entries) {
		return false
	}
	for i := range a.Entries {
		if a.Entries[i] != b.Entries[i] {
			return false
		}
	}
	return true
}

// finishLegacyRemoval completes the removal of a legacy F.lock/ directory
// that its remover detached to F.lock.removing and then did not finish (it
// was killed, or the directory fsync after the detach failed). Run by a
// holder of the lock: F.lock is our record, so no legacy directory can be
// detached to that name meanwhile, and a remover still at work holds the
// tree's guard (replayDetached). It returns what to report, or nil when
// nothing is detached there.
func (l *locker) finishLegacyRemoval() *Residue {
	removing := l.lockName + exactfs.RemovingSuffix
	if _, err := l.dir.Lstat(removing); err != nil {
		return nil
	}
	ok, blocked, err := l.replayDetached(l.lockName, legacyDetached)
	r := &Residue{Name: removing, Kind: "removing"}
	switch {
	case ok:
		r.Removed, r.Note = true, "removed: a legacy lock directory whose removal was interrupted after its detach"
	case blocked != "":
		r.Note = "kept: " + blocked
	case err != nil:
		r.Note = "kept: " + err.Error()
	default:
		r.Note = "kept: another process is removing it"
	}
	return r
}

// reclaimLegacy evaluates a legacy F.lock/ directory and removes it when
// it is stale. The identity brackets the verdict: the tree is captured
// before it and again after it, and removed (by exact tree removal of that
// snapshot) only when both captures are the same tree (removeTree). A
// legacy writer takes no claim, so it can replace the judged directory with
// a live one at any moment; the bracket makes the reclaim decline instead
// of deleting it.
func (l *locker) reclaimLegacy() (freed bool, c *contention, err error) {
	before, err := l.captureTree(l.lockName)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, nil, nil
	case err != nil:
		return false, &contention{reason: ReasonLegacyUnprovenanced, holder: "a legacy lock directory that cannot be described exactly: " + err.Error()}, nil
	}
	v := l.judgeLegacy(before)
	if !v.stale {
		return false, &contention{reason: ReasonLegacyUnprovenanced, holder: v.holder}, nil
	}
	// Under the transition claim: no guard. A removal of an earlier legacy
	// directory killed after its detach left F.lock.removing: removeTree
	// finishes it first, or this one could never detach.
	freed, blocked, err := l.removeTree(treeRemoval{name: l.lockName, judged: before, detached: legacyDetached,
		afterVerdict: hook.LockAfterLegacyVerdict, beforeRemoval: hook.LockBeforeLegacyRemoval})
	switch {
	case freed || (err != nil && blocked == ""):
		return freed, nil, err
	case blocked != "":
		return false, &contention{reason: ReasonLegacyUnprovenanced, holder: "a stale legacy lock directory whose removal is blocked by " + blocked}, err
	}
	// Another process changed it after its verdict or during its removal;
	// the next look judges again.
	return false, &contention{reason: ReasonLegacyUnprovenanced, holder: "a legacy lock directory that changed after its verdict"}, nil
}
