package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/statelock"
	"github.com/exactfs/exactfs/store"
)

type recoverOptions struct {
	dryRun     bool
	minAge     time.Duration
	configRoot string
	hostLocal  bool
}

func init() {
	register(&command{
		name:    "recover",
		summary: "clear what automatic reclaim leaves alone: a crashed transition claim, crash residue",
		usage:   "recover [--dry-run] [--min-age DUR] STATEFILE",
		help: `Do, through exact operations only, what the lock's automatic reclaim leaves
alone, printing each action and the evidence for it:

  1. statelock.Recover: a crashed transition claim (STATEFILE.lock.transition/
     empty, its sidecar absent or malformed, at least 10s old, no kernel lock
     on the sidecar) is removed by exact tree removal of the snapshot judged,
     and a malformed sidecar by exact unlink; exact-unlink placeholders and
     quarantined owner records at least 15 minutes old are removed by exact
     unlink, and the empty directory a move killed half-way left behind
     (.gjc-delete-movedir-<uuid>: ours or the directory owner's, at least 15
     minutes old) by rmdir.
     A claim whose owner is provably dead is reclaimed too.
  2. A lock whose holder is provably dead is reclaimed by taking the lock once
     (TryLock) and releasing it, by the library's own rules. So is a record
     this host wrote under another config root (status names it) whose holder
     is dead when judged with that root's host id. A live or unverifiable
     holder is left alone and reported, with the safe way out.
  3. Staging files of interrupted writes of STATEFILE are handed to the store's
     reaper, which removes only regular single-link files with a private
     residue name, older than --min-age, that (Linux) no process has open. It
     runs only when STATEFILE's directory is owner-only (0700), and it walks
     that directory and the ones below it.

Anything else (a claim directory that is not empty, a legacy lock directory,
a symlink or FIFO at a lock path, a live holder) is left for a person, and
each such thing is listed with the reason. With --dry-run nothing is changed
and the plan is printed; it is the "recover" list of 'exactfs status --json',
and a real run attempts exactly it.

Exit status: 0 when every planned action was done or there was nothing to do
(what is left for a person does not count), 75 when a planned action was not
done because its object was in use (a process had the staging file open, the
lock was taken meanwhile): run it again later, 76 when something changed
under an action (it was then left alone), 77 for an unsafe object at the lock
path, 74 for other failures.

Examples:
  exactfs recover --dry-run state.json
  exactfs recover state.json
  exactfs recover --min-age 0 state.json   # staging residue of any age`,
		flags: func(fs *flagSet) any {
			o := &recoverOptions{}
			fs.BoolVar(&o.dryRun, "dry-run", false, "print the plan; change nothing")
			fs.DurationVar(&o.minAge, "min-age", store.DefaultReapAge, "remove residue only when older than `DUR`")
			registerIdentityFlags(fs, &o.configRoot, &o.hostLocal)
			return o
		},
		run: runRecover,
	})
}

func runRecover(e *env, opts any, args []string) error {
	o := opts.(*recoverOptions)
	if len(args) != 1 {
		return usagef("want exactly one STATEFILE, got %d arguments", len(args))
	}
	if err := namedLockRecord("recover", args[0]); err != nil {
		return err
	}
	r := &recovery{w: e.stdout, stateFile: args[0], lockOpts: identityOptions(o.configRoot, o.hostLocal)}
	st, plan, err := inspectLock(r.stateFile, r.lockOpts, currentConfigRoot(o.configRoot), o.minAge)
	if err != nil {
		if st != nil {
			writeStatus(r.w, st)
		}
		return err
	}
	r.plan = plan
	if o.dryRun {
		r.printPlan()
	} else {
		r.library()
		took, swept := r.reclaimDead()
		r.sweep(took, swept)
		r.note(reapStaging(r.w, r.stateFile, plan, o))
	}
	writeLeft(r.w, st, o.minAge)
	if len(plan) == 0 {
		if st.Lock == "permission_denied" {
			fmt.Fprintf(r.w, "nothing recovered: %s is a record this user may not open, so it cannot be judged\n", st.LockPath)
		} else {
			fmt.Fprintf(r.w, "nothing to recover: %s is %s; no crashed claim, no residue to remove\n", st.LockPath, strings.ReplaceAll(string(st.Lock), "_", " "))
		}
		if st.Lock == "permission_denied" {
			return permissionRecordError{st.LockPath, st.Detail}
		}
		if st.Claim.State == "permission_denied" {
			return permissionClaimError{st.LockPath + ".transition", st.Claim.Detail}
		}
	}
	if o.dryRun {
		return nil
	}
	return r.outcome()
}

// recovery is one real run of recover: the plan it carries out (the
// "recover" list of exactfs status) and what went wrong so far.
type recovery struct {
	w         io.Writer
	stateFile string
	lockOpts  []statelock.Option
	plan      []planStep
	errs      []error // failures (exit 74, 76, 77 by their codes)
	notDone   int     // planned actions not done, their object in use (exit 75)
}

// note counts a step's outcome: notDone planned actions not done, and err.
func (r *recovery) note(notDone int, err error) {
	r.notDone += notDone
	if err != nil {
		r.errs = append(r.errs, err)
	}
}

// outcome is the run's error: every failure, else the actions not done.
func (r *recovery) outcome() error {
	if err := errors.Join(r.errs...); err != nil {
		return err
	}
	if r.notDone > 0 {
		return notDoneError{r.notDone}
	}
	return nil
}

// printPlan is a dry run: what a real run would do, with the evidence.
func (r *recovery) printPlan() {
	for _, p := range r.plan {
		fmt.Fprintf(r.w, "would %s %s\n  evidence: %s\n", strings.ReplaceAll(p.Kind, "-", " "), p.Path, p.Evidence)
	}
}

// library is step 1: the library's explicit recovery (statelock.Recover),
// when the plan holds one of its actions.
func (r *recovery) library() {
	if !hasLib(r.plan) {
		return
	}
	acts, err := statelock.Recover(r.stateFile, false, r.lockOpts...)
	r.report(acts)
	r.note(0, err)
}

// report prints the outcome of each of the library's steps and counts it.
func (r *recovery) report(acts []statelock.Action) {
	for _, a := range acts {
		fmt.Fprintf(r.w, "%s %s\n  evidence: %s\n", strings.ReplaceAll(a.Kind, "-", " "), a.Path, a.Evidence)
		switch {
		case a.Err != nil:
			fmt.Fprintf(r.w, "  refused, nothing removed: %v\n", a.Err)
			r.note(0, a.Err)
		case a.Kind == statelock.KindKeepLock, a.Kind == statelock.KindKeepClaim:
			// The kernel could not tell whether it is in use: left for a
			// person (the evidence says how), and the run says so (75).
			fmt.Fprintln(r.w, "  kept, nothing removed")
			r.note(1, nil)
		case a.Done:
			fmt.Fprintln(r.w, "  done")
		}
	}
}

// reclaimDead is step 2: a provably dead holder is reclaimed by the
// library's own rules, by taking the lock once and releasing it (with the
// host identity of the config root it was judged under, for a record of
// another root). Judged again now: step 1 may have freed a claim, and
// anyone may have taken the lock since. took: an acquisition was made;
// swept: what its residue sweep found.
func (r *recovery) reclaimDead() (took bool, swept []statelock.Residue) {
	for _, p := range r.plan {
		if p.Kind != stepReclaim {
			continue
		}
		fmt.Fprintf(r.w, "reclaim %s by taking the lock once and releasing it\n  evidence: %s\n", p.Path, p.Evidence)
		tryOpts := r.lockOpts
		if p.host != nil {
			tryOpts = append(append([]statelock.Option{}, r.lockOpts...), statelock.WithHostIdentity(*p.host))
		}
		res, done := r.takeOnce(tryOpts)
		took, swept = took || done, append(swept, res...)
	}
	return took, swept
}

// sweep carries out the plan's residue sweeps (stepSweep): the lock's own
// sweep, made by an acquisition (step 2's, which is this process's first
// and a reclaim, so it sweeps; or one made here for it), reported for each
// planned file.
func (r *recovery) sweep(took bool, swept []statelock.Residue) {
	sweeps := map[string]bool{}
	for _, p := range r.plan {
		if p.Kind == stepSweep {
			sweeps[p.Path] = true
		}
	}
	if len(sweeps) > 0 && !took {
		fmt.Fprintf(r.w, "sweep the residue of %s by taking the lock once and releasing it\n", r.stateFile)
		res, _ := r.takeOnce(r.lockOpts)
		swept = append(swept, res...)
	}
	dir := filepath.Dir(r.stateFile)
	for _, res := range swept {
		p := filepath.Join(dir, res.Name)
		if !sweeps[p] {
			continue
		}
		delete(sweeps, p)
		fmt.Fprintf(r.w, "sweep %s\n  %s\n", p, res.Note)
		if !res.Removed {
			r.note(1, nil)
		}
	}
	for p := range sweeps {
		if _, err := os.Lstat(p); err == nil {
			fmt.Fprintf(r.w, "sweep %s\n  not done: the lock's holder did not remove it\n", p)
			r.note(1, nil)
		}
	}
}

// takeOnce is takeOnce for this run, its outcome counted.
func (r *recovery) takeOnce(opts []statelock.Option) ([]statelock.Residue, bool) {
	res, done, err := takeOnce(r.w, r.stateFile, opts)
	switch {
	case err != nil:
		r.note(0, err)
	case !done:
		r.note(1, nil)
	}
	return res, done
}

// takeOnce takes the lock of stateFile once and releases it, printing the
// outcome; it returns what the acquisition's residue sweep found. done is
// false, with no error, when the lock was busy (left alone).
func takeOnce(w io.Writer, stateFile string, opts []statelock.Option) ([]statelock.Residue, bool, error) {
	h, err := statelock.TryLock(stateFile, opts...)
	switch {
	case errors.Is(err, statelock.ErrLocked):
		fmt.Fprintf(w, "  not done, left alone: %v\n", err)
		return nil, false, nil
	case err != nil:
		fmt.Fprintf(w, "  failed: %v\n", err)
		return nil, false, err
	}
	residue := h.Residue()
	if err := h.Unlock(); err != nil {
		fmt.Fprintf(w, "  taken, but the release failed: %v\n", err)
		return residue, true, err
	}
	fmt.Fprintln(w, "  done: the lock was taken and released; it is free")
	return residue, true, nil
}

// notDoneError reports planned actions that a real run could not carry
// out because the object was in use or changed meanwhile (exit 75).
type notDoneError struct{ n int }

func (e notDoneError) Error() string {
	return fmt.Sprintf("%d planned action(s) not done: the object is in use or changed meanwhile (see above); nothing else was touched", e.n)
}

func hasLib(plan []planStep) bool {
	for _, p := range plan {
		if p.lib {
			return true
		}
	}
	return false
}

// writeLeft prints what recover leaves for a person, and why.
func writeLeft(w io.Writer, st *statusJSON, minAge time.Duration) {
	switch {
	case st.Lock == "held" && planned(st, stepReclaim):
		// A holder of another config root, dead there: reclaimed above.
	case st.Lock == "held":
		fmt.Fprintf(w, "leave %s: held by %s\n", st.LockPath, describeHolder(st.Holder))
		for _, l := range foreignAdvice(st) {
			fmt.Fprintf(w, "  %s\n", l)
		}
	case st.Lock == "legacy" || st.Lock == "unreadable":
		fmt.Fprintf(w, "leave %s: %s: %s\n", st.LockPath, st.Lock, st.Detail)
		if st.Lock == "unreadable" {
			// The protocol never reclaims a record it cannot read (it may be
			// a peer's, still being written). A person who knows its writer
			// is gone can remove exactly these bytes.
			if id, err := exactfs.IdentityOf(st.LockPath); err == nil {
				fmt.Fprintf(w, "  if you know its writer is gone, remove exactly this record with:\n    exactfs rm --expect %s %s\n", id, st.LockPath)
			}
		}
	}
	if st.Claim.State == "not_empty" || st.Claim.State == "permission_denied" || st.Claim.State == "held" && st.Claim.AgeMs > 0 && !planned(st, "remove-claim") {
		fmt.Fprintf(w, "leave transition claim (%s): %s\n", strings.ReplaceAll(st.Claim.State, "_", " "), st.Claim.Detail)
	}
	dir := filepath.Dir(st.StateFile)
	for _, r := range st.Residue {
		p := filepath.Join(dir, r.Name)
		if r.Kind != "staging" || plannedPath(st, p) {
			continue
		}
		c := stagingToReap(dir, []residueJSON{r}, minAge)
		switch {
		case len(c) == 0:
			fmt.Fprintf(w, "leave %s: changed less than --min-age %s ago, or not a regular file with a single link\n", r.Name, minAge)
		case c[0].unknown != "":
			fmt.Fprintf(w, "leave %s: %s, and the reaper removes only what the kernel proves unopened\n", r.Name, c[0].unknown)
			fmt.Fprintf(w, "  if you know its writer is gone, remove exactly this file with:\n    exactfs rm --expect %s %s\n", c[0].id, p)
		default:
			err := reaperRefuses(dir)
			fmt.Fprintf(w, "leave %s: the reaper runs only in an owner-only (0700) directory: %v\n", r.Name, err)
		}
	}
}

func planned(st *statusJSON, kind string) bool {
	for _, a := range st.Recover {
		if a.Kind == kind {
			return true
		}
	}
	return false
}

func plannedPath(st *statusJSON, path string) bool {
	for _, a := range st.Recover {
		if a.Path == path {
			return true
		}
	}
	return false
}

// reapStaging hands the directory to the store reaper, which removes only
// residue it can prove inert, and returns how many planned files it kept.
func reapStaging(w io.Writer, stateFile string, plan []planStep, o *recoverOptions) (notDone int, err error) {
	want := map[string]bool{}
	for _, p := range plan {
		if p.Kind == stepReap {
			want[p.Path] = true
		}
	}
	if len(want) == 0 {
		return 0, nil
	}
	dirPath := filepath.Dir(stateFile)
	s, err := store.Open(dirPath)
	if err != nil {
		return 0, fmt.Errorf("the store reaper cannot run in %s: %w", dirPath, err)
	}
	defer s.Close()
	rep, err := s.Reap(store.ReapMinAge(o.minAge))
	if rep != nil {
		for _, p := range rep.Removed {
			full := filepath.Join(dirPath, p)
			fmt.Fprintf(w, "reaped %s\n", full)
			delete(want, full)
		}
		for _, k := range rep.Kept {
			full := filepath.Join(dirPath, k.Path)
			fmt.Fprintf(w, "kept %s: %s\n", full, k.Reason)
			if want[full] {
				notDone++
			}
		}
	}
	// A planned file neither removed nor kept was gone when the reaper
	// looked: someone else removed it, which is what was wanted.
	return notDone, err
}
