package statelock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/liveness"
)

// takeClaim takes the transition claim: the directory F.lock.transition
// (made by mkdir, or a spare renamed onto the name without replace: either
// admits exactly one taker), then the sidecar F.lock.transition.owner with
// the record rules of takeRecord. busy reports a claim held by someone
// else; a stale one (inspectClaim says when) is reclaimed first.
func (l *locker) takeClaim() (c *heldRecord, busy *contention, err error) {
	for try := 0; ; try++ {
		err := l.makeClaim()
		if err == nil {
			break
		}
		if transientBusy(err) {
			// A claim directory a peer has just removed while a handle
			// keeps it (delete-pending): busy, as the reference reads it.
			return nil, &contention{reason: ReasonTransitionClaimTimeout, holder: "the transition claim (" + busyHolder + ")"}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, nil, &initError{err}
		}
		// The common case is a live taker a moment ago: a claim younger than
		// claimMinAge is never judged, so say busy without inspecting it.
		// (One whose mtime is in the future is inspected: claimAges.)
		if fi, err := l.dir.Lstat(l.claim); err == nil && fi.IsDir() && time.Since(fi.ModTime()) < claimMinAge && !fi.ModTime().After(time.Now()) {
			return nil, &contention{reason: ReasonTransitionClaimTimeout, holder: "the transition claim"}, nil
		}
		freed, why, err := l.reclaimStaleClaim()
		if err != nil {
			return nil, nil, err
		}
		if !freed || try > 0 {
			holder := "the transition claim"
			if why != "" {
				holder += " (" + why + ")"
			}
			return nil, &contention{reason: ReasonTransitionClaimTimeout, holder: holder}, nil
		}
	}
	hook.Fire(hook.LockClaimTaken, l.path(l.claim))
	rec := l.newOwner()
	h, ok, err := l.reuseSidecar(rec)
	if !ok && err == nil {
		l.replayDue = true
		if err = l.claimDurable(); err == nil {
			h, busy, err = l.takeRecord(l.sidecar, rec, true)
		}
	}
	if h != nil && l.replayDue {
		// Off the steady state only: a reclaimer killed after detaching a
		// crashed claim left it at F.lock.transition.removing; finish it
		// (replaying the removal completes it). It is residue, not our
		// business to fail over: what cannot be finished now stays for
		// Inspect to name.
		l.replayDue = false
		l.replayDetached(l.claim, emptyTree)
	}
	if h == nil {
		// The directory is ours and empty: giving it back is safe by name,
		// because nobody judges a claim younger than claimMinAge.
		if rerr := l.dropClaim(); rerr != nil {
			err = errors.Join(err, rerr)
		}
		if busy != nil {
			busy.reason = ReasonTransitionClaimTimeout
		}
		return nil, busy, err
	}
	return h, nil, nil
}

// claimDurable makes the claim directory we just made durable before our
// record is written into the sidecar (SPEC §4.3: no order of write-back
// may leave "no claim directory, sidecar not a tombstone"). Without it a
// power cut can keep the sidecar's new bytes and lose the mkdir, and the
// reference then fails on every call until an exactfs process heals the
// sidecar (the model found it: internal/model). The steady state never
// gets here: its taker leaves the sidecar a tombstone (§4.8.4).
func (l *locker) claimDurable() error {
	if err := fault(hook.LockClaimDirSync, l.path(l.claim)); err != nil {
		return fmt.Errorf("taking the transition claim: making %s durable before its sidecar is written: %w", l.path(l.claim), err)
	}
	hook.Fire(hook.LockClaimDirSync, l.path(l.claim))
	if err := l.dir.Sync(); err != nil {
		return fmt.Errorf("taking the transition claim: making %s durable before its sidecar is written: %w", l.path(l.claim), err)
	}
	return nil
}

// releaseClaim gives the claim back: the sidecar becomes a tombstone (in
// place: we wrote it and hold its OFD lock and the claim, so it is still
// exactly what we wrote), then the directory leaves the name (dropClaim).
// Our OFD lock on the sidecar is held until after that, so a contender
// never mistakes a claim between those two steps for a crashed one. The
// sidecar's descriptor is then parked for the next claim (park.go).
//
// SPEC §4.3 (decided 2026-12-03) asks that no power cut leave "no claim
// directory, sidecar not a tombstone". In the steady state (the sidecar a
// tombstone, OFD locks here) the taker never writes the sidecar at all:
// its kernel lock attests the claim and the tombstone stays (kept,
// §4.8.4, reuseReleased), so there is nothing to write back here. Only
// when our record was written into it (the sidecar's first take, a
// crashed claim's record replaced by the full path, a filesystem without
// OFD locks) is the tombstone written and fsynced before the directory
// goes: an fsync on every release was measured (Lock+Unlock 0.2-0.4 ms ->
// 3-4 ms) and is what the steady state avoids.
func (l *locker) releaseClaim(c *heldRecord) error {
	ok := false
	defer func() {
		// Unlocked explicitly, so that the next taker's reuseReleased does
		// not meet our lock for the length of a close.
		ofdUnlock(c.f)
		if ok {
			park([2]uint64{c.id.Dev, c.id.Ino}, c.f, l.cfg.policy.ParkIdle)
		} else {
			c.f.Close()
		}
	}()
	if !c.kept {
		if _, err := overwrite(c.f, l.path(l.sidecar), int64(len(c.data)), c.data, l.tombstone().Encode()); err != nil {
			return fmt.Errorf("releasing the transition claim: %w", err)
		}
		// Our record was written into the sidecar (its first take, a
		// crashed predecessor's record replaced, or no OFD locks here):
		// its tombstone is durable before the directory goes (SPEC §4.3).
		hook.Fire(hook.LockClaimSidecarSync, l.path(l.sidecar))
		if err := c.f.Sync(); err != nil {
			return fmt.Errorf("releasing the transition claim: making the tombstone of %s durable before the claim directory goes: %w", l.path(l.sidecar), err)
		}
	}
	if err := l.dropClaim(); err != nil {
		return fmt.Errorf("releasing the transition claim: %w", err)
	}
	ok = true
	return nil
}

// withClaim runs step under the transition claim.
func (l *locker) withClaim(step func() error) (busy *contention, err error) {
	c, busy, err := l.takeClaim()
	if c == nil {
		return busy, err
	}
	serr := step()
	if rerr := l.releaseClaim(c); rerr != nil {
		return nil, errors.Join(serr, rerr)
	}
	return nil, serr
}

// claimState is what occupies F.lock.transition and what may be done about it.
type claimState struct {
	present bool
	dir     bool // a directory (the current protocol); else a superseded regular file
	tree    *exactfs.Tree
	treeErr error
	side    *snapshot // the sidecar, nil when absent or unreadable
	sideErr error
	verdict string // the sidecar's verdict, for people
	stale   bool   // the stale-claim rules authorize automatic reclaim
	why     string
	future  bool // the directory's or the sidecar's mtime is ahead of the clock
}

// inspectClaim captures the claim directory (an exact tree snapshot) and
// its sidecar, and judges them by the crashed-claim rule (judgeSidecar,
// judgeClaimDir: verdict.go).
func (l *locker) inspectClaim() claimState {
	var st claimState
	fi, err := l.dir.Lstat(l.claim)
	if err != nil {
		st.treeErr = err
		return st
	}
	st.present = true
	st.dir = fi.IsDir()
	if !st.dir {
		return st
	}
	st.tree, st.treeErr = l.captureTree(l.claim)
	f, s, serr := l.openCapture(l.sidecar)
	st.side, st.sideErr = s, serr
	var v verdict
	held := false
	if f != nil {
		v, held = l.judgeSidecar(s, f)
		f.Close()
		st.verdict = v.Judgement.String()
	}
	var dirAge, sideAge time.Duration
	if st.treeErr == nil {
		dirAge, sideAge, st.future = claimAges(st.tree.Root(), s)
	}
	st.stale, st.why = judgeClaimDir(claimEvidence{tree: st.tree, treeErr: st.treeErr, side: s, sideVerdict: v, sideText: st.verdict,
		held: held, dirAge: dirAge, sideAge: sideAge})
	if st.future {
		st.why += "; " + futureWhy(st.tree.Root(), s, dirAge)
	}
	return st
}

// reclaimStaleClaim removes a crashed claim when inspectClaim says it may:
// take the claim directory's reclaim guard (guardTree: one reclaimer at a
// time), capture again after the verdict (the tree and the sidecar must be
// exactly what was judged), finish a detached claim a killed reclaimer left
// at F.lock.transition.removing (replayDetached), rewrite a dead sidecar to
// a tombstone (entombSidecar: the steady state, and what a TypeScript peer
// needs to find there), then remove the directory by exact tree removal of
// that snapshot. freed reports that the claim name is free now. Every race
// with another process (a second reclaimer, a new taker, a record rewritten
// or replaced meanwhile) ends in freed or not freed, never in an error: err
// is a filesystem error of this call only.
// why describes, for the caller's timeout, why a claim that is not freed
// stays: the verdict that keeps it, or something in the way of its removal
// that no automatic rule removes.
func (l *locker) reclaimStaleClaim() (freed bool, why string, err error) {
	st := l.inspectClaim()
	if !st.present {
		return true, "", nil
	}
	if !st.dir {
		freed, err := l.reclaimSupersededClaim()
		return freed, "", err
	}
	if !st.stale {
		return false, st.why, nil
	}
	freed, blocked, err := l.removeTree(treeRemoval{name: l.claim, judged: st.tree, guard: true, detached: emptyTree,
		afterVerdict: hook.LockAfterClaimInspection, beforeRemoval: hook.LockBeforeClaimRemoval,
		prepare: func() (bool, error) { return l.sidecarStill(st.side) }})
	if err != nil {
		// Another user's crashed claim in a directory that keeps us from
		// removing it: name the owner (trust.go).
		err = l.refuseIfForeign(l.claim, err)
	}
	if blocked != "" {
		blocked = "a crashed claim whose removal is blocked by " + blocked
	}
	return freed, blocked, err
}

// sidecarStill is the last step before a crashed claim's removal: the
// sidecar judged (if there was one) must still be there, unchanged, and a
// dead record in it is rewritten to a tombstone (entombSidecar).
func (l *locker) sidecarStill(judged *snapshot) (ok bool, err error) {
	if judged == nil {
		return true, nil
	}
	cur, err := l.capture(l.sidecar)
	if err != nil || !sameRecord(cur.id, judged.id) {
		return false, nil
	}
	if judged.released() {
		return true, nil
	}
	return l.entombSidecar(judged)
}

// entombSidecar rewrites the dead record judged in the sidecar of a crashed
// claim, in place, to a released tombstone, before the claim directory is
// removed. While that directory exists nobody else writes the sidecar (every
// writer of it, exactfs or the reference, needs the directory first), and we
// hold the claim's reclaim guard, so the rewrite races no one: its proof
// (the bytes and inode judged, read again through the descriptor we write
// with) is the reference's for an in-place rewrite. Leaving a tombstone
// rather than unlinking the record after the removal matters for
// TypeScript peers: the reference takes a claim by mkdir and then a sidecar
// by exclusive create or reuse of a tombstone, and fails outright (EEXIST)
// on any other record there; an unlink after the removal races the next
// taker of the freed name and loses whenever that one is quicker, or the
// reclaimer is killed in between. A kill after the rewrite leaves the
// crashed claim with a tombstone sidecar, which is reclaimed once it is a
// second old. The tombstone is fsynced before the directory is removed
// (SPEC §4.3), so no power cut leaves the sidecar's dead record without its
// claim directory. ok is false when the sidecar changed since its verdict
// (contention).
func (l *locker) entombSidecar(judged *snapshot) (ok bool, err error) {
	f, err := l.dir.OpenFile(l.sidecar, os.O_RDWR, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || unsafeType(err) || leased(err) {
			return false, nil
		}
		return false, err
	}
	defer f.Close()
	if why, st := l.distrustFile(f); why != "" {
		// Not ours to rewrite (trust.go): unlink exactly the version
		// judged instead. No sidecar and no claim directory is a state
		// every taker, the reference's too, creates its sidecar from.
		err := l.dir.UnlinkExact(l.sidecar, judged.id, exactfs.LockQuarantineName())
		switch {
		case err == nil:
			return true, nil
		case permissionError(err), errors.Is(err, exactfs.ErrHardLinkUnsupported):
			return false, l.refuseUntrusted(l.sidecar, st, why, err)
		case exactRemoved(err) == nil:
			return false, nil
		}
		return false, err
	}
	if _, err := lockOrPlain(f, l.newOwner()); err != nil {
		if errors.Is(err, errOFDConflict) {
			return false, nil
		}
		return false, err
	}
	defer ofdUnlock(f)
	_, _, err = l.rewrite(l.sidecar, f, judged.id, judged.data, l.tombstone().Encode(), false)
	switch {
	case err == nil:
		// Durable before the directory goes (SPEC §4.3): after a power cut
		// the reference must find a tombstone wherever it finds no claim.
		if err := f.Sync(); err != nil {
			return false, fmt.Errorf("making the tombstone of %s durable before the crashed claim is removed: %w", l.path(l.sidecar), err)
		}
		return true, nil
	case errors.Is(err, errRecordChanged), errors.Is(err, exactfs.ErrChangedDuringRead), errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}

// replayDetached finishes the removal of a directory that an exact tree
// removal detached to name+".removing" and did not finish: its remover was
// killed after the detach (replaying the removal completes it).
// The detached tree must be what such a removal leaves (want: for a claim,
// an empty directory) and its reclaim guard free (a live remover holds it
// from before its detach to the end); it is then removed by RemoveTreeExact
// with a snapshot of itself, the replay path. ok reports that nothing is
// detached under that name any more, so a removal of name may detach.
// A live remover at work is contention (not ok, no error); a detached tree
// that is not what a removal leaves is reported in blocked and kept.
func (l *locker) replayDetached(name string, want func(*exactfs.Tree) bool) (ok bool, blocked string, err error) {
	removing := name + exactfs.RemovingSuffix
	tree, err := l.captureTree(removing)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, "", nil
	case err != nil && treeContention(err):
		return false, "", nil
	case err != nil && exactfs.CodeOf(err) != "" && exactfs.CodeOf(err) != exactfs.CodeIOError &&
		exactfs.CodeOf(err) != exactfs.CodePermissionDenied:
		return false, fmt.Sprintf("%s, which cannot be described exactly (%v); check it and remove it by hand", l.path(removing), err), nil
	case err != nil:
		return false, "", err
	case !want(tree):
		return false, fmt.Sprintf("%s, a detached tree with %d entries that no interrupted removal of ours leaves; check it and remove it by hand",
			l.path(removing), len(tree.Entries)-1), nil
	}
	release, held, err := l.guardTree(removing, tree.Root())
	if err != nil || !held {
		return false, "", err
	}
	defer release()
	if err := treeRemoved(l.dir.RemoveTreeExact(name, tree)); err != nil {
		return false, "", err
	}
	if _, err := l.dir.Lstat(removing); err == nil {
		return false, "", nil
	}
	return true, "", nil
}

// treeContention reports tree errors that mean another process changed the
// tree under us: it is gone, changed, or a name we needed appeared.
func treeContention(err error) bool {
	switch exactfs.CodeOf(err) {
	case exactfs.CodeNotFound, exactfs.CodeIdentityMismatch, exactfs.CodeQuarantineCollision,
		exactfs.CodeChangedDuringRead, exactfs.CodeDestinationExists:
		return true
	}
	return false
}

// treeRemoved maps the outcome of an exact tree removal: done, done with
// residue pending, or a race lost to another process (nothing removed, or
// only what a concurrent remover was removing anyway) are all nil; a
// tree that became unprovable (a symlink, hard link or FIFO planted in it)
// is too, because the next look describes it. What is left is an error the
// filesystem raised.
func treeRemoved(err error) error {
	switch {
	case err == nil, errors.Is(err, exactfs.ErrCleanupPending), treeContention(err):
		return nil
	}
	switch exactfs.CodeOf(err) {
	case exactfs.CodeReparsePoint, exactfs.CodeUnsupportedEntry, exactfs.CodeHardLinkUnsupported,
		exactfs.CodeNotUTF8, exactfs.CodeNotDirectory:
		return nil
	}
	return err
}

// reclaimSupersededClaim handles a regular file at F.lock.transition, the
// claim of a superseded protocol: it is reclaimed by the same exact-identity
// rules as F.lock itself (liveness.Reclaim with the lock's judge). A
// tombstone there is left for explicit cleanup, as the reference does.
func (l *locker) reclaimSupersededClaim() (bool, error) {
	rm := liveness.Removal{Quarantine: exactfs.LockQuarantineName, Unguarded: true,
		Judged:   func() { hook.Fire(hook.LockAfterClaimInspection, l.path(l.claim)) },
		Removing: func() { hook.Fire(hook.LockBeforeClaimRemoval, l.path(l.claim)) }}
	j, err := liveness.Reclaim(l.dir, l.claim, rm, l.judgeSupersededClaim)
	switch {
	case j.Verdict == liveness.Dead:
		if err := exactRemoved(err); err != nil {
			return false, err
		}
		return !errors.Is(err, exactfs.ErrIdentityMismatch), nil
	case errors.Is(err, fs.ErrNotExist):
		return true, nil
	case unsafeType(err):
		return false, &unsafeError{err}
	}
	return false, nil
}
