package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

type statusOptions struct {
	json       bool
	configRoot string
	hostLocal  bool
}

func init() {
	register(&command{
		name:    "status",
		summary: "show who holds the lock of a state file, whether they are alive, and any crash residue",
		usage:   "status [--json] STATEFILE",
		help: `Describe the lock of STATEFILE without touching it (statelock.Inspect): whether
STATEFILE.lock is free, released (a tombstone), held or stale; the holder's
pid, host (this host or another), start time, age, and the liveness verdict
with its reason (alive, dead, unknown: only "dead" lets the next caller reclaim
the lock); the transition claim STATEFILE.lock.transition (none, held, stale,
crashed); a legacy lock directory; crash residue beside STATEFILE (staging
files of interrupted writes, quarantined records, placeholders); and what
'exactfs recover' would do.

status reads through no-follow, non-blocking descriptors and changes nothing
beside STATEFILE (like every lock command, it creates the installation secret
under the config root if there is none yet).
Exit status: 0 when the lock could be inspected (free or held), 77 when a
symlink, FIFO, socket or device is at STATEFILE.lock (it is described, not
opened), 74 when the files cannot be read.

JSON output (--json), one object; fields are added, never renamed or removed:
  {
    "state_file": "state.json",
    "lock_path":  "state.json.lock",
    "lock":   "free"        no lock record yet
            | "released"    a released tombstone: free to take
            | "held"        an owner that is alive or not provably dead
            | "stale"       an owner that is provably dead: the next lock call reclaims it
            | "unreadable"  a malformed record (kept)
            | "legacy"      a legacy lock directory (detail: its verdict)
            | "unsafe",     a symlink, FIFO, socket or device (detail says which; exit 77)
    "holder": null | {
        "pid": 4242,
        "host_id": "8c02c60c...",       "" when the record names no host
        "this_host": true,
        "start_time": "123456", "start_time_format": "linux-proc-v1",
        "token": "6f1c...",
        "kernel": true,                 written by exactfs, backed by a kernel OFD lock
        "age_ms": 3021,                 since the record was written
        "verdict": "alive" | "dead" | "unknown",
        "reason": "the holder's kernel lock on the record is held"},
    "detail": "...",
    "claim": {
        "state": "none" | "held" | "stale" (the next lock call reclaims it)
               | "crashed" (no readable owner: 'exactfs recover' removes it)
               | "not_empty" | "superseded_file",
        "age_ms": 120, "sidecar": "the sidecar owner's verdict", "detail": "why"},
    "residue": [ {"name": ".state.json.<uuid>.replacement",
                  "kind": "staging" | "quarantine" | "placeholder" | "removing",
                  "size": 0, "age_ms": 5000} ],
    "recover": [ {"kind": "remove-claim", "path": "...", "evidence": "..."} ]
                                        what 'exactfs recover' would do now
  }

Examples:
  exactfs status state.json
  exactfs status --json state.json | jq -r .holder.verdict`,
		flags: func(fs *flagSet) any {
			o := &statusOptions{}
			fs.BoolVar(&o.json, "json", false, "print one JSON object (schema above)")
			registerIdentityFlags(fs, &o.configRoot, &o.hostLocal)
			return o
		},
		run: runStatus,
	})
}

func runStatus(e *env, opts any, args []string) error {
	o := opts.(*statusOptions)
	if len(args) != 1 {
		return usagef("want exactly one STATEFILE, got %d arguments", len(args))
	}
	st, err := inspectLock(args[0], identityOptions(o.configRoot, o.hostLocal))
	if st == nil {
		return err
	}
	if o.json {
		if jerr := json.NewEncoder(e.stdout).Encode(st); jerr != nil {
			return jerr
		}
	} else {
		writeStatus(e.stdout, st)
	}
	return err
}

func writeStatus(w io.Writer, st *statusJSON) {
	switch st.Lock {
	case "free":
		fmt.Fprintf(w, "%s: free (no lock record yet)\n", st.LockPath)
	case "released":
		fmt.Fprintf(w, "%s: free (released tombstone)\n", st.LockPath)
	case "held":
		fmt.Fprintf(w, "%s: held by %s\n", st.LockPath, describeHolder(st.Holder))
	case "stale":
		fmt.Fprintf(w, "%s: stale: held by %s\n  the holder is gone: the next lock call reclaims this lock at once\n", st.LockPath, describeHolder(st.Holder))
	case "legacy":
		fmt.Fprintf(w, "%s: a legacy lock directory: %s\n", st.LockPath, st.Detail)
	default:
		fmt.Fprintf(w, "%s: %s: %s\n", st.LockPath, st.Lock, st.Detail)
	}
	if st.Holder != nil && st.Lock == "held" {
		fmt.Fprintf(w, "  start time %s (%s), token %s\n", st.Holder.StartTime, orDash(st.Holder.StartTimeFormat), orDash(st.Holder.Token))
		fmt.Fprintln(w, "  the lock is respected until its holder releases it or is proved dead")
	}
	c := st.Claim
	if c.State == "none" {
		fmt.Fprintln(w, "transition claim: none")
	} else {
		fmt.Fprintf(w, "transition claim: %s (%s old)\n", strings.ReplaceAll(c.State, "_", " "), roundAge(time.Duration(c.AgeMs)*time.Millisecond))
		if c.Detail != "" {
			fmt.Fprintf(w, "  %s\n", c.Detail)
		}
	}
	if len(st.Residue) == 0 {
		fmt.Fprintln(w, "residue: none")
	} else {
		fmt.Fprintf(w, "residue: %d\n", len(st.Residue))
		for _, r := range st.Residue {
			fmt.Fprintf(w, "  %-12s %s, %d bytes, %s old\n", r.Kind, r.Name, r.Size, roundAge(time.Duration(r.AgeMs)*time.Millisecond))
			if r.Note != "" {
				fmt.Fprintf(w, "  %-12s %s\n", "", r.Note)
			}
		}
	}
	if len(st.Recover) > 0 {
		fmt.Fprintf(w, "'exactfs recover %s' would:\n", st.StateFile)
		for _, a := range st.Recover {
			fmt.Fprintf(w, "  %s %s (%s)\n", a.Kind, a.Path, a.Evidence)
		}
	}
}

func describeHolder(h *holderJSON) string {
	if h == nil {
		return "an unknown owner"
	}
	where := "another host (" + shortID(h.HostID) + ")"
	switch {
	case h.ThisHost:
		where = "this host"
	case h.HostID == "":
		where = "an unnamed host"
	}
	return fmt.Sprintf("pid %d on %s, for %s — %s (%s)", h.Pid, where, roundAge(time.Duration(h.AgeMs)*time.Millisecond), h.Verdict, h.Reason)
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12] + "…"
	}
	return id
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
