package main

import (
	"errors"
	"fmt"
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
		help: `Do, through exact operations only, what the lock's automatic reclaim refuses to
do on its own, printing each action and the evidence for it:

  1. A crashed transition claim: STATEFILE.lock.transition/ is an empty
     directory whose sidecar STATEFILE.lock.transition.owner is absent, empty
     or malformed (its taker was killed before writing it), at least 10s old,
     and (Linux) no process holds a kernel lock on the sidecar. The sidecar is
     removed by exact unlink of the bytes judged, then the directory by exact
     tree removal of the snapshot judged. Automatic reclaim never does this,
     because a claim without a readable owner could belong to anyone.
  2. A dead holder or a stale claim with a dead owner: reclaimed by taking
     the lock once (TryLock) and releasing it, i.e. by the library's own
     rules. A live or unverifiable holder is left alone and reported.
  3. Crash residue in STATEFILE's directory (staging files of interrupted
     writes, quarantined records, placeholders), removed by the store's
     reaper: only regular single-link files with a private residue name,
     older than --min-age, empty or (Linux) open by no process. The
     directory must be owner-only (0700); otherwise residue is only listed.

Anything else (a non-empty claim directory, a legacy lock directory with a
live owner, a symlink or FIFO at a lock path) is left for a person and
reported. With --dry-run nothing is changed and the plan is printed.

Exit status: 0 when every action succeeded (or there was nothing to do),
76 when something changed under an action (nothing was removed), 77 for an
unsafe object at a lock path, 74 for other failures.

Examples:
  exactfs recover --dry-run state.json
  exactfs recover state.json
  exactfs recover --min-age 0 state.json   # residue of any age`,
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
	stateFile := args[0]
	in, err := newInspector(stateFile, o.configRoot, o.hostLocal)
	if err != nil {
		return err
	}
	defer in.close()
	st, err := in.inspect(stateFile)
	if st == nil {
		return err
	}
	w := e.stdout
	if err != nil {
		writeStatus(w, st)
		return err
	}
	verb := func(do string) string {
		if o.dryRun {
			return "would " + do
		}
		return do
	}
	var errs []error
	acted := false

	// 1. A crashed transition claim.
	switch st.Claim.State {
	case "crashed":
		acted = true
		if err := in.recoverClaim(w, o.dryRun, verb); err != nil {
			fmt.Fprintf(w, "  failed: %v\n", err)
			errs = append(errs, err)
		}
	case "not_empty", "unsafe", "held", "releasing":
		acted = true
		fmt.Fprintf(w, "leave: transition claim %s: %s\n", strings.ReplaceAll(st.Claim.State, "_", " "), st.Claim.Detail)
	}

	// 2. A dead holder or a stale claim: the library's own reclaim.
	needsReclaim := (st.Holder != nil && st.Holder.Verdict == "dead") || st.Claim.State == "stale"
	switch {
	case needsReclaim && o.dryRun:
		acted = true
		fmt.Fprintf(w, "would reclaim: %s by taking the lock once and releasing it (%s)\n", st.LockPath, reclaimEvidence(st))
	case needsReclaim || st.Claim.State == "crashed":
		acted = true
		fmt.Fprintf(w, "reclaim: taking %s once (%s)\n", st.LockPath, reclaimEvidence(st))
		h, err := statelock.TryLock(stateFile, identityOptions(o.configRoot, o.hostLocal)...)
		switch {
		case errors.Is(err, statelock.ErrLocked):
			fmt.Fprintf(w, "  left alone: %v\n", err)
		case err != nil:
			fmt.Fprintf(w, "  failed: %v\n", err)
			errs = append(errs, err)
		default:
			if err := h.Unlock(); err != nil {
				fmt.Fprintf(w, "  taken, but the release failed: %v\n", err)
				errs = append(errs, err)
			} else {
				fmt.Fprintln(w, "  done: the lock was taken and released; it is free")
			}
		}
	case st.Holder != nil:
		fmt.Fprintf(w, "leave: %s is held by %s\n", st.LockPath, describeHolder(st.Holder))
	}

	// 3. Residue.
	if len(st.Residue) > 0 {
		acted = true
		if err := in.recoverResidue(w, st, o); err != nil {
			errs = append(errs, err)
		}
	}
	if !acted {
		fmt.Fprintf(w, "nothing to recover: %s is %s; no crashed claim, no residue\n", st.LockPath, strings.ReplaceAll(st.Lock, "_", " "))
	}
	return errors.Join(errs...)
}

func reclaimEvidence(st *statusJSON) string {
	if st.Holder != nil && st.Holder.Verdict == "dead" {
		return fmt.Sprintf("holder pid %d is dead: %s", st.Holder.Pid, st.Holder.Reason)
	}
	if st.Claim.Detail != "" {
		return st.Claim.Detail
	}
	return "the claim was cleared"
}

// recoverClaim removes a crashed transition claim: an empty directory whose
// sidecar is absent or holds no owner record. Everything is captured, judged,
// captured again, and removed only as the exact objects that were judged.
func (in *inspector) recoverClaim(w interface{ Write([]byte) (int, error) }, dryRun bool, verb func(string) string) error {
	claim, side := in.base+claimSuffix, in.base+sidecarSuffix
	claimPath, sidePath := filepath.Join(in.dir.Name(), claim), filepath.Join(in.dir.Name(), side)
	tree, err := in.dir.CaptureTree(claim)
	if err != nil {
		return err
	}
	if len(tree.Entries) != 1 {
		return fmt.Errorf("%s is not empty; left alone", claimPath)
	}
	age := in.age(tree.Root().MtimeNs)
	var sideData []byte
	var sideID exactfs.Identity
	sidePresent := false
	f, err := in.dir.OpenFile(side, os.O_RDONLY, 0)
	switch {
	case errors.Is(err, exactfs.ErrNotFound):
	case err != nil:
		return err
	default:
		defer f.Close()
		if sideData, sideID, err = exactfs.CaptureFile(f); err != nil {
			return err
		}
		sidePresent = true
		if _, perr := statelock.ParseRecord(sideData); perr == nil {
			return fmt.Errorf("the sidecar now holds an owner record; the claim is not crashed, left alone")
		}
		if held, known := ofdHeld(f); known && held {
			return fmt.Errorf("a process holds a kernel lock on the sidecar: its taker is alive and writing it; left alone")
		}
		if a := in.age(sideID.MtimeNs); a < age {
			age = a
		}
	}
	evidence := fmt.Sprintf("empty claim directory %s old; sidecar ", roundAge(age))
	if sidePresent {
		evidence += fmt.Sprintf("holds %d bytes that are not an owner record, and no process holds a kernel lock on it", len(sideData))
	} else {
		evidence += "absent"
	}
	if age < claimMinAgeForOp {
		fmt.Fprintf(w, "leave: crashed transition claim %s: only %s old (%s); try again in %s\n", claimPath, roundAge(age), evidence, claimMinAgeForOp)
		return nil
	}
	if sidePresent {
		fmt.Fprintf(w, "%s: %s (%s)\n", verb("remove sidecar"), sidePath, evidence)
	}
	fmt.Fprintf(w, "%s: %s (%s)\n", verb("remove crashed transition claim"), claimPath, evidence)
	if dryRun {
		return nil
	}
	// The claim directory keeps every lock call out while we work: nobody
	// else changes the sidecar until it is gone. The sidecar goes first, so
	// the next taker creates a fresh one.
	if sidePresent {
		if err := in.dir.UnlinkExact(side, sideID, lockQuarantine+exactfs.NewUUID()+".json"); err != nil && !errors.Is(err, exactfs.ErrCleanupPending) {
			return err
		}
		fmt.Fprintf(w, "  done: removed %s (exactly the %d bytes judged)\n", sidePath, len(sideData))
	}
	if err := in.dir.RemoveTreeExact(claim, tree); err != nil {
		return err
	}
	fmt.Fprintf(w, "  done: removed %s (exactly the empty directory judged)\n", claimPath)
	return nil
}

// recoverResidue hands residue to the store reaper, which removes only what
// it can prove inert.
func (in *inspector) recoverResidue(w interface{ Write([]byte) (int, error) }, st *statusJSON, o *recoverOptions) error {
	dirPath := in.dir.Name()
	if o.dryRun {
		for _, r := range st.Residue {
			age := time.Duration(r.AgeMs) * time.Millisecond
			if age < o.minAge {
				fmt.Fprintf(w, "leave: %s %s: %s old, younger than --min-age %s\n", r.Kind, r.Name, roundAge(age), o.minAge)
				continue
			}
			fmt.Fprintf(w, "would reap: %s %s (%d bytes, %s old) if it is a single-link file no process has open\n", r.Kind, r.Name, r.Size, roundAge(age))
		}
		return nil
	}
	s, err := store.Open(dirPath)
	if err != nil {
		fmt.Fprintf(w, "leave: residue in %s: the directory is not an owner-only store, so the reaper does not run there (%v)\n", dirPath, err)
		for _, r := range st.Residue {
			fmt.Fprintf(w, "  %s %s, %d bytes\n", r.Kind, r.Name, r.Size)
		}
		return nil
	}
	defer s.Close()
	rep, err := s.Reap(store.ReapMinAge(o.minAge))
	if rep != nil {
		for _, p := range rep.Removed {
			fmt.Fprintf(w, "reap: removed %s\n", p)
		}
		for _, k := range rep.Kept {
			fmt.Fprintf(w, "reap: kept %s: %s\n", k.Path, k.Reason)
		}
	}
	return err
}
