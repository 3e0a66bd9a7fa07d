package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/store"
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
A lock record that names another host is explained: if it was written on this
host under another config root (another user's, root's via sudo, a TypeScript
peer's ~/.gjc), status says which, and judges its holder with that root's host
id; a dead one is then reclaimed by 'exactfs recover'. For a record of another
machine it prints the exact removal for a person who knows its holder is gone.

Exit status: 0 when the lock was described (free, released, held, stale,
legacy), 74 when STATEFILE.lock is not a readable owner record (unreadable: it
is described; no lock call will take it) or the files cannot be read, 77 when
a symlink, FIFO, socket or device is at STATEFILE.lock (it is described, not
opened).

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
        "reason": "the holder's kernel lock on the record is held",
        "other_config_root": {          only for a record of another host id that
          "path": "/home/al/.config/exactfs",  this host wrote under another config root
          "verdict": "dead", "reason": "..."}},  judged with that root's host id
    "detail": "...",
    "claim": {
        "state": "none" | "held" | "stale" (the next lock call reclaims it)
               | "crashed" (no readable owner: 'exactfs recover' removes it)
               | "not_empty" | "superseded_file",
        "age_ms": 120, "sidecar": "the sidecar owner's verdict", "detail": "why"},
    "residue": [ {"name": ".state.json.<uuid>.replacement",
                  "kind": "staging" | "quarantine" | "placeholder" | "removing",
                  "size": 0, "age_ms": 5000} ],
    "recover": [ {"kind": "remove-claim" | "remove-sidecar" | "remove-lock"
                        | "remove-placeholder" | "remove-quarantine"
                        | "reclaim-lock" | "reap-staging",
                  "path": "...", "evidence": "..."} ]
                                        exactly what 'exactfs recover --dry-run' lists
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
	st, _, err := inspectLock(exactfs.SystemPath(args[0]), identityOptions(o.configRoot, o.hostLocal), currentConfigRoot(o.configRoot), store.DefaultReapAge)
	if st == nil {
		return err
	}
	if err == nil && st.Lock == "unreadable" {
		err = unreadableError{st.LockPath, st.Detail}
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
	switch st.Lock {
	case "free", "released", "held", "stale":
		if st.Detail != "" {
			fmt.Fprintf(w, "  %s\n", st.Detail)
		}
	}
	if st.Holder != nil && st.Lock == "held" {
		fmt.Fprintf(w, "  start time %s (%s), token %s\n", st.Holder.StartTime, orDash(st.Holder.StartTimeFormat), orDash(st.Holder.Token))
		fmt.Fprintln(w, "  the lock is respected until its holder releases it or is proved dead")
		for _, l := range foreignAdvice(st) {
			fmt.Fprintf(w, "  %s\n", l)
		}
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
				fmt.Fprintf(w, "               %s\n", r.Note)
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

// unreadableError is status's answer for a lock record that cannot be
// read as one (exit 74): no lock call will take it, and only a person or
// 'exactfs recover' (for an old one) can clear it.
type unreadableError struct{ lockPath, detail string }

func (u unreadableError) Error() string {
	return fmt.Sprintf("%s is not a readable owner record (%s); no lock call will take it", u.lockPath, u.detail)
}

// foreignAdvice explains a record that names a host other than this one,
// and the safe ways out, one line each; nil for any other record.
func foreignAdvice(st *statusJSON) []string {
	h := st.Holder
	if h == nil || h.ThisHost || st.Lock != "held" {
		return nil
	}
	id, _ := exactfs.IdentityOf(st.LockPath)
	rm := fmt.Sprintf("exactfs rm --expect %s %s", id, st.LockPath)
	if h.HostID == "" {
		return []string{
			"the record names no host (an old writer): pids are judged only for records of this host,",
			"so it is respected until released. If this directory is never shared with another machine,",
			"pass --host-local and its pid is judged here ('exactfs recover --host-local " + st.StateFile + "').",
		}
	}
	if o := h.OtherConfigRoot; o != nil {
		lines := []string{
			"this host wrote it, but under another config root: " + o.Path,
			"(the host id in a record is derived from the config root's secret, so this command, using",
			"its own root, cannot recognize it). Judged with that root's id, the holder is " + o.Verdict + ": " + o.Reason + ".",
		}
		if o.Verdict == "dead" {
			lines = append(lines, "'exactfs recover "+st.StateFile+"' reclaims it; give every process that shares this lock one --config-root.")
		} else {
			lines = append(lines, "give every process that shares this lock the same --config-root (e.g. --config-root "+o.Path+").")
		}
		return lines
	}
	return []string{
		"another host wrote it (no config root on this machine gives its host id): a pid from another",
		"machine proves nothing here, so the lock is respected until that host releases it. Run",
		"'exactfs recover' on that host; or, if you know its holder is gone, remove exactly this record:",
		"  " + rm + "   (exit 76, nothing removed, if it changed meanwhile)",
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
