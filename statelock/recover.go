package statelock

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/liveness"
)

// Thresholds of explicit recovery.
const (
	// A claim directory without a readable sidecar is removed only once it
	// is this old: its taker makes the directory and writes the sidecar
	// within milliseconds, so a claim still without one after this long
	// has a dead taker.
	RecoverClaimAge = 10 * time.Second
	// Residue (placeholders, quarantined owner records) is removed only
	// once it is this old, as the TypeScript reapers do.
	RecoverResidueAge = 15 * time.Minute
)

// Action is one step Recover took or, in a dry run, would take.
type Action struct {
	Kind     string // "remove-claim", "remove-sidecar", "remove-lock", "remove-placeholder", "remove-quarantine", "remove-staging", "remove-movedir"; "keep-claim", "keep-lock"
	Path     string
	Evidence string // why it is provably safe, for people; for a keep-: what was found, why it is kept, and how to remove it by hand
	Done     bool   // false in a dry run, or when the step was refused; always false for a keep-
	Err      error  // why a step was refused (nothing was removed then)
}

// A keep- Action is something a removal rule would take but for one answer
// the kernel could not give here (no OFD locks, no lease probe: macOS, a
// filesystem without them): whether a process holds a lock on it or has it
// open for writing. Unknown is never read as "no": Recover keeps it, and
// says so and how a person who has checked removes it by hand.
const (
	KindKeepClaim = "keep-claim"
	KindKeepLock  = "keep-lock"
)

// lockWords is what Recover may say about kernel locks on a file it is
// about to remove: "no kernel lock on it" only when the kernel answered.
func lockWords(known bool) string {
	if known {
		return "no kernel lock on it"
	}
	return "open for writing by no process (the kernel cannot tell about locks here)"
}

// Recover removes what automatic reclaim refuses to guess about, each step
// only with proof, and returns what it did (or, with dryRun, what it would
// do) with the evidence:
//   - a crashed transition claim whose sidecar is missing or malformed: the
//     claim directory must be empty by an exact tree snapshot, no exactfs
//     process may hold a kernel lock on the sidecar, and the directory must
//     be at least RecoverClaimAge old; it is removed by exact tree removal
//     of that very snapshot (a successor that replaced it survives), and a
//     malformed sidecar as old by exact unlink. A claim the automatic rules
//     call crashed is reclaimed the same way;
//   - an empty or malformed F.lock at least 30 s old on which no exactfs
//     process holds a kernel lock (a TypeScript peer killed between creating
//     and writing it), by exact unlink of the judged bytes under the claim;
//   - exact-unlink placeholders (zero bytes, one link) and quarantined owner
//     records at least RecoverResidueAge old, by exact unlink;
//   - the empty directory an exact directory move (Dir.MoveEmptyDir: a
//     spare claim directory on its way to the claim's name) leaves at its
//     private name when it is killed between its two renames, at least
//     RecoverResidueAge old, ours or the directory owner's, by rmdir of
//     the directory judged (judgeMoveAside). Anything else there (not a
//     directory, a symlink, not empty, another user's) is kept: Inspect
//     lists it with the reason.
//
// Where the kernel cannot tell whether a process holds a lock on the file
// (no OFD locks: macOS), "no kernel lock" above is replaced by "open for
// writing by no process" from the lease probe; where that cannot tell
// either, or a process has the F.lock open for writing, the claim or the
// F.lock is kept and reported as a keep-claim or keep-lock Action, with
// how to remove it by hand (staging residue is only kept: Inspect lists it).
//
// A lock with a readable owner record is never touched here: whether that
// owner is dead is for Lock to judge.
func Recover(stateFile string, dryRun bool, opts ...Option) ([]Action, error) {
	l, err := openLocker(stateFile, opts, false)
	if err != nil {
		return nil, err
	}
	defer l.close()
	var acts []Action
	acts = append(acts, l.recoverClaim(dryRun)...)
	acts = append(acts, l.recoverLock(dryRun)...)
	res, err := l.residue()
	if err != nil {
		return acts, lockError(l.lockPath, ReasonInspectionFailed, 0, 0, "", err)
	}
	for _, r := range res {
		if a, ok := l.recoverResidue(r, dryRun); ok {
			acts = append(acts, a)
		}
	}
	return acts, nil
}

func (l *locker) recoverClaim(dryRun bool) []Action {
	cs := l.inspectClaim()
	if cs.future && !cs.stale {
		// Its mtime is ahead of the clock: its age is how long it is seen
		// unchanged (claimAges). Look again once that is long enough.
		time.Sleep(claimMinAge + 50*time.Millisecond)
		cs = l.inspectClaim()
	}
	if !cs.present || !cs.dir {
		return nil
	}
	a := Action{Kind: "remove-claim", Path: l.path(l.claim)}
	switch {
	case cs.stale:
		a.Evidence = cs.why
		if dryRun {
			return []Action{a}
		}
		freed, why, err := l.reclaimStaleClaim()
		if err == nil && !freed && why != "" {
			err = errors.New(why)
		}
		a.Done, a.Err = freed && err == nil, err
		return []Action{a}
	case cs.treeErr != nil || cs.tree == nil:
		return nil
	case len(cs.tree.Entries) != 1:
		return nil // never: a claim directory is always empty
	}
	// What automatic reclaim refuses: no readable sidecar.
	dirAge, ok := claimRecoverable(cs)
	if !ok {
		return nil
	}
	var look recoverSidecar
	if f, s, err := l.openCapture(l.sidecar); err == nil {
		look.s = s
		look.held, look.known = heldOnIt(f)
		look.writer, look.writerWhy = writerOf(f)
		f.Close()
	} else {
		look.err = err
	}
	kind, evidence, side, ok := l.judgeCrashedClaim(dirAge, look)
	if !ok {
		return nil
	}
	a.Kind, a.Evidence = kind, evidence
	if kind == KindKeepClaim {
		return []Action{a}
	}
	acts := []Action{a}
	if side != nil {
		acts = append(acts, Action{Kind: "remove-sidecar", Path: l.path(l.sidecar), Evidence: "malformed sidecar of the crashed claim"})
	}
	if dryRun {
		return acts
	}
	// The removal is bound to the snapshot the evidence was taken from, under
	// the claim's reclaim guard (no reclaimer is at it meanwhile), after any
	// removal a killed reclaimer left detached is finished.
	freed, blocked, err := l.removeTree(treeRemoval{name: l.claim, judged: cs.tree, guard: true, detached: emptyTree})
	switch {
	case err != nil:
		acts[0].Err = err
		return acts
	case blocked != "":
		acts[0].Err = errors.New("an earlier removal of this claim is still detached: " + blocked)
		return acts
	case !freed:
		acts[0].Err = errors.New("the claim changed since it was judged, or another process is removing it right now; left alone")
		return acts
	}
	acts[0].Done = true
	if side != nil {
		// Exactly the sidecar judged above, whoever took the claim since.
		_, err := liveness.Reclaim(l.dir, l.sidecar, liveness.Removal{Quarantine: exactfs.LockQuarantineName},
			func(c liveness.Captured) liveness.Judgement { return sameAs(c, side.id) })
		acts[1].Done, acts[1].Err = removedOrPending(err)
	}
	return acts
}

// removedOrPending is a recovery step's outcome from its removal's error:
// done (with residue pending or not), or refused with the error.
func removedOrPending(err error) (done bool, _ error) {
	return err == nil || errors.Is(err, exactfs.ErrCleanupPending), err
}

func (l *locker) recoverResidue(r Residue, dryRun bool) (Action, bool) {
	var kind string
	switch r.Kind {
	case "movedir":
		return l.recoverMoveAside(r, dryRun)
	case "placeholder":
		kind = "remove-placeholder"
	case "quarantine":
		kind = "remove-quarantine"
	case "staging":
		if !strings.HasPrefix(r.Name, "."+l.lockName+".") {
			return Action{}, false // the state file's own staging: exactfs's reaper
		}
		kind = "remove-staging"
	default:
		return Action{}, false
	}
	a := Action{Kind: kind, Path: l.path(r.Name)}
	rm := liveness.Removal{Quarantine: func() string { return placeholderFree(r.Name) }}
	_, err := liveness.Reclaim(l.dir, r.Name, rm, func(c liveness.Captured) liveness.Judgement {
		if l.foreignFile(c.File) != "" {
			return recoverVerdict("", dryRun) // another user's file is never removed (trust.go)
		}
		a.Evidence = residueEvidence(r.Kind, c)
		return recoverVerdict(a.Evidence, dryRun)
	})
	if a.Evidence == "" {
		return a, false
	}
	if !dryRun {
		a.Done, a.Err = removedOrPending(err)
	}
	return a, true
}

// captureMoveAside captures what is at name, a move's private name, for
// judgeMoveAside: its lstat (never following a symlink) and, when it is a
// directory, its exact tree within the lock's look limits.
func (l *locker) captureMoveAside(name string) moveAside {
	var m moveAside
	m.st, m.lerr = l.dir.LstatRaw(name)
	if m.lerr == nil && m.st.Mode.IsDir() {
		m.tree, m.terr = l.captureTree(name)
	}
	return m
}

// recoverMoveAside removes the empty directory a killed Dir.MoveEmptyDir
// left at its private name, when judgeMoveAside finds the evidence: it
// captures the tree again just before the removal, which must be the very
// tree judged (same inode, same times, still empty), and removes it by
// rmdir, which removes only an empty directory and never follows a
// symlink. Nobody else renames onto a mover's random name; an object
// swapped in after the second capture could only be removed if it is an
// empty directory as well.
func (l *locker) recoverMoveAside(r Residue, dryRun bool) (Action, bool) {
	a := Action{Kind: "remove-movedir", Path: l.path(r.Name)}
	judged := l.captureMoveAside(r.Name)
	a.Evidence, _ = l.judgeMoveAside(judged)
	if a.Evidence == "" {
		return a, false
	}
	if dryRun {
		return a, true
	}
	if now, err := l.captureTree(r.Name); err != nil || !sameTree(now, judged.tree) {
		a.Err = fmt.Errorf("%s changed since it was judged; left alone", a.Path)
		return a, true
	}
	a.Err = l.dir.Rmdir(r.Name)
	a.Done = a.Err == nil
	return a, true
}

// placeholderFree picks a quarantine name for removing residue itself.
func placeholderFree(string) string { return exactfs.LockQuarantineName() }

// recoverLock removes an F.lock that no rule may reclaim automatically
// because it proves nothing about its writer: an empty or malformed record
// (a writer killed between creating and writing it; exactfs itself never
// leaves one, it publishes records whole). It must be at least staleAge
// old, with no kernel lock on it, and is removed under the transition
// claim by exact unlink of the judged bytes (judged again under the claim),
// so a successor keeps the name.
func (l *locker) recoverLock(dryRun bool) []Action {
	a := Action{Kind: "remove-lock", Path: l.lockPath}
	var (
		judged exactfs.Identity
		kept   string
	)
	look := func(c liveness.Captured) liveness.Judgement {
		a.Evidence, kept = abandonedLock(c)
		judged = c.ID
		return recoverVerdict("", true) // a look: never removes
	}
	liveness.Reclaim(l.dir, l.lockName, liveness.Removal{}, look)
	if kept != "" {
		a.Kind, a.Evidence = KindKeepLock, kept+
			fmt.Sprintf(". If no process has it open (check with lsof), remove it by hand: rm %s", l.lockPath)
		return []Action{a}
	}
	if a.Evidence == "" {
		return nil
	}
	if dryRun {
		return []Action{a}
	}
	changed := false
	busy, err := l.withClaim(func() error {
		rm := liveness.Removal{Quarantine: exactfs.LockQuarantineName, Unguarded: true}
		_, err := liveness.Reclaim(l.dir, l.lockName, rm, func(c liveness.Captured) liveness.Judgement {
			ev, _ := abandonedLock(c)
			changed = !sameRecord(c.ID, judged) || ev == ""
			return recoverVerdict(a.Evidence, changed)
		})
		if changed || errors.Is(err, exactfs.ErrIdentityMismatch) || errors.Is(err, exactfs.ErrNotFound) {
			return fmt.Errorf("%w since it was judged; left alone", errRecordChanged)
		}
		return err
	})
	switch {
	case busy != nil:
		a.Err = fmt.Errorf("the transition claim is busy: %s", busy.holder)
	default:
		a.Done, a.Err = removedOrPending(err)
	}
	return []Action{a}
}
