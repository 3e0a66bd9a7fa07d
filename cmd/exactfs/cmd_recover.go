package main

import (
	"errors"
	"fmt"
	"io"
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
     unlink. A claim whose owner is provably dead is reclaimed too.
  2. A lock whose holder is provably dead is reclaimed by taking the lock once
     (TryLock) and releasing it, by the library's own rules. A live or
     unverifiable holder is left alone and reported.
  3. Staging files of interrupted writes of STATEFILE are handed to the store's
     reaper, which removes only regular single-link files with a private
     residue name, older than --min-age, that (Linux) no process has open. It
     runs only when STATEFILE's directory is owner-only (0700), and it walks
     that directory and the ones below it.

Anything else (a claim directory that is not empty, a legacy lock directory,
a symlink or FIFO at a lock path, a live holder) is left for a person. With
--dry-run nothing is changed and the plan is printed.

Exit status: 0 when every action succeeded or there was nothing to do, 76
when something changed under an action (it was then left alone), 77 for an
unsafe object at the lock path, 74 for other failures.

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
	stateFile := resolveSystemSymlinks(args[0])
	lockOpts := identityOptions(o.configRoot, o.hostLocal)
	st, err := inspectLock(stateFile, lockOpts)
	w := e.stdout
	if err != nil {
		if st != nil {
			writeStatus(w, st)
		}
		return err
	}
	would := ""
	if o.dryRun {
		would = "would "
	}
	var errs []error
	acted := false

	// 1. The library's explicit recovery.
	acts, err := statelock.Recover(stateFile, o.dryRun, lockOpts...)
	for _, a := range acts {
		acted = true
		fmt.Fprintf(w, "%s%s %s\n  evidence: %s\n", would, strings.ReplaceAll(a.Kind, "-", " "), a.Path, a.Evidence)
		switch {
		case a.Err != nil:
			fmt.Fprintf(w, "  refused, nothing removed: %v\n", a.Err)
			errs = append(errs, a.Err)
		case a.Done:
			fmt.Fprintln(w, "  done")
		}
	}
	if err != nil {
		errs = append(errs, err)
	}

	// 2. A provably dead holder: the library's own reclaim.
	if !o.dryRun {
		if s, err := statelock.Inspect(stateFile, lockOpts...); err == nil {
			st.Lock, st.Claim.State = string(s.State), map[bool]string{true: "stale", false: st.Claim.State}[s.Claim.Crashed]
			if s.Holder != nil && s.State == statelock.StateStale {
				st.Holder = holderOf(s.Holder)
			}
		}
	}
	switch {
	case st.Lock == "stale" || st.Claim.State == "stale":
		acted = true
		fmt.Fprintf(w, "%sreclaim %s by taking the lock once and releasing it\n  evidence: %s\n", would, st.LockPath, staleEvidence(st))
		if !o.dryRun {
			h, err := statelock.TryLock(stateFile, lockOpts...)
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
		}
	case st.Lock == "held":
		acted = true
		fmt.Fprintf(w, "leave %s: held by %s\n", st.LockPath, describeHolder(st.Holder))
	case st.Lock == "legacy" || st.Lock == "unreadable":
		acted = true
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
	if st.Claim.State == "not_empty" || st.Claim.State == "held" && len(acts) == 0 && st.Claim.AgeMs > 0 {
		fmt.Fprintf(w, "leave transition claim (%s): %s\n", strings.ReplaceAll(st.Claim.State, "_", " "), st.Claim.Detail)
	}

	// 3. Staging residue of interrupted writes: the store reaper.
	var staging []residueJSON
	for _, r := range st.Residue {
		if r.Kind == "staging" {
			staging = append(staging, r)
		}
	}
	if len(staging) > 0 {
		acted = true
		if err := reapStaging(w, stateFile, staging, o); err != nil {
			errs = append(errs, err)
		}
	}
	if !acted {
		fmt.Fprintf(w, "nothing to recover: %s is %s; no crashed claim, no residue to remove\n", st.LockPath, st.Lock)
	}
	return errors.Join(errs...)
}

func staleEvidence(st *statusJSON) string {
	if st.Holder != nil && st.Lock == "stale" {
		return fmt.Sprintf("holder pid %d is dead: %s", st.Holder.Pid, st.Holder.Reason)
	}
	return st.Claim.Detail
}

// reapStaging hands the directory to the store reaper, which removes only
// residue it can prove inert.
func reapStaging(w io.Writer, stateFile string, staging []residueJSON, o *recoverOptions) error {
	dirPath := filepath.Dir(stateFile)
	if o.dryRun {
		for _, r := range staging {
			age := time.Duration(r.AgeMs) * time.Millisecond
			if age < o.minAge {
				fmt.Fprintf(w, "leave %s: %s old, younger than --min-age %s\n", r.Name, roundAge(age), o.minAge)
				continue
			}
			fmt.Fprintf(w, "would reap %s (%d bytes, %s old) if it is a single-link file no process has open\n", r.Name, r.Size, roundAge(age))
		}
		return nil
	}
	s, err := store.Open(dirPath)
	if err != nil {
		fmt.Fprintf(w, "leave staging residue: %s is not an owner-only store directory, so the reaper does not run there (%v)\n", dirPath, err)
		return nil
	}
	defer s.Close()
	rep, err := s.Reap(store.ReapMinAge(o.minAge))
	if rep != nil {
		for _, p := range rep.Removed {
			fmt.Fprintf(w, "reaped %s\n", filepath.Join(dirPath, p))
		}
		for _, k := range rep.Kept {
			fmt.Fprintf(w, "kept %s: %s\n", filepath.Join(dirPath, k.Path), k.Reason)
		}
	}
	return err
}
