package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/store"
)

type statusOptions struct {
	json       bool
	exitStatus bool
	configRoot string
	hostLocal  bool
}

func init() {
	register(&command{
		name:    "status",
		summary: "show who holds the lock of a state file, whether they are alive, and any crash residue",
		usage:   "status [--json] [--exit-status] STATEFILE|DIR",
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

The holder's command line is shown where it can be read (Linux, a live holder
in this pid namespace whose start time is still the record's): lslocks cannot
name the holder of an OFD lock. A holder in another pid namespace (a
container, unshare --pid) is named as such, with the namespace: its pid is not
one ps shows here.

A DIR (an existing directory, ".", or a path ending in /) lists every lock in
it, one line each (--json: an array of the objects below); for a directory
that is itself used as a STATEFILE, the lock beside it (DIR.lock) is listed
last. Naming a lock record instead of its state file (status x.json.lock,
where x.json.lock is a lock) is refused with the state file to give.

Exit status: 0 when the lock was described (free, released, held, stale,
legacy), 74 when STATEFILE.lock is not a readable owner record (unreadable: it
is described; no lock call will take it) or the files cannot be read, 77 when
a symlink, FIFO, socket or device is at STATEFILE.lock (it is described, not
opened). With --exit-status, the state of the lock instead (for DIR, the
highest of its locks), for scripts:
  0  free: no record, or a released one
  1  held: by a live owner, or one whose death cannot be proved (a lock call
     waits); also a legacy lock directory
  2  stale: the holder is provably dead; the next lock call reclaims it at once
  3  blocked: no lock call will take it until 'exactfs recover' or a person
     acts: a crashed transition claim, a record that is unreadable or that
     this user may not open, something unsafe at STATEFILE.lock
and 64 or 74 only when the lock could not be described at all.

JSON output (--json), one object; fields are added, never renamed or removed:
  {
    "state_file": "state.json",
    "lock_path":  "state.json.lock",
    "lock":   "free"        no lock record yet
            | "released"    a released tombstone: free to take
            | "held"        an owner that is alive or not provably dead
            | "stale"       an owner that is provably dead: the next lock call reclaims it
            | "unreadable"  a malformed record (kept)
            | "permission_denied"  a record this user may not open (record_owner says
                            whose; its owner's lock calls take it as usual)
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
        "pid_ns": 4026531836, "other_pid_ns": false,   the record's pid namespace
        "this_boot": true,              the record carries this machine's boot id
        "command": "deploy.sh --prod",  a live holder's command line, where readable
        "other_config_root": {          only for a record of another host id that
          "path": "/home/al/.config/exactfs",  this host wrote under another config root
          "verdict": "dead", "reason": "..."}},  judged with that root's host id
    "detail": "...",
    "record_owner": {"uid": 1000, "mode": "0600"},   only for permission_denied
    "claim": {
        "state": "none" | "held" | "stale" (the next lock call reclaims it)
               | "crashed" (no readable owner: 'exactfs recover' removes it)
               | "not_empty" | "superseded_file"
               | "permission_denied" (another uid's directory this user may
                 not read: owner says whose; age_ms is -1),
        "age_ms": 120, "sidecar": "the sidecar owner's verdict", "detail": "why"},
    "residue": [ {"name": ".state.json.<uuid>.replacement",
                  "kind": "staging" | "quarantine" | "placeholder" | "removing"
                        | "temp" | "movedir",
                  "size": 0, "age_ms": 5000} ],
    "recover": [ {"kind": "remove-claim" | "remove-sidecar" | "remove-lock"
                        | "remove-placeholder" | "remove-quarantine"
                        | "remove-staging" | "remove-movedir"
                        | "reclaim-lock" | "reap-staging",
                  "path": "...", "evidence": "..."} ]
                                        exactly what 'exactfs recover --dry-run' lists
  }

Examples:
  exactfs status state.json
  exactfs status --json state.json | jq -r .holder.verdict
  exactfs status --exit-status state.json >/dev/null; echo $?
  exactfs status /var/lib/app/`,
		flags: func(fs *flagSet) any {
			o := &statusOptions{}
			fs.BoolVar(&o.json, "json", false, "print one JSON object (schema above); for DIR, an array of them")
			fs.BoolVar(&o.exitStatus, "exit-status", false, "exit with the lock's state: 0 free, 1 held, 2 stale, 3 blocked (see above)")
			registerIdentityFlags(fs, &o.configRoot, &o.hostLocal)
			return o
		},
		run: runStatus,
	})
}

func runStatus(e *env, opts any, args []string) error {
	o := opts.(*statusOptions)
	if len(args) != 1 {
		return usagef("want exactly one STATEFILE or DIR, got %d arguments", len(args))
	}
	path := args[0] // as given: the library walks trusted system links itself (syslinks.go)
	if sf, ok := strings.CutSuffix(strings.TrimRight(path, "/"), ".lock.transition"); ok && filepath.Base(sf) != "" {
		if _, err := exactfs.Lstat(path); err == nil {
			return usagef("%s is the transition claim of the lock of %s, not a state file: give the state file (exactfs status %s)", path, sf, shellJoin([]string{sf}))
		}
	}
	if isDirArg(path) {
		return statusDir(e, o, path)
	}
	if err := namedLockRecord("status", path); err != nil {
		return err
	}
	noteLockSuffix(e, path)
	st, _, err := inspectLock(path, identityOptions(o.configRoot, o.hostLocal), currentConfigRoot(o.configRoot), store.DefaultReapAge)
	if st == nil {
		return err
	}
	if err == nil {
		err = recordError(st)
	}
	if o.json {
		if jerr := json.NewEncoder(e.stdout).Encode(st); jerr != nil {
			return jerr
		}
	} else {
		writeStatus(e.stdout, st)
	}
	if o.exitStatus {
		return exitStatus(lockExitStatus(st))
	}
	return err
}

// recordError is status's error for a lock record that is described but
// that no lock call of this user will take (exit 74), or nil.
func recordError(st *statusJSON) error {
	switch st.Lock {
	case "unreadable":
		return unreadableError{st.LockPath, st.Detail}
	case "permission_denied":
		return permissionRecordError{st.LockPath, st.Detail}
	}
	if st.Claim.State == "permission_denied" {
		return permissionClaimError{st.LockPath + ".transition", st.Claim.Detail}
	}
	return nil
}

// The states of 'status --exit-status'.
const (
	statusFree    = 0
	statusHeld    = 1
	statusStale   = 2
	statusBlocked = 3
)

// lockExitStatus is the --exit-status of a described lock: the lock
// record's state, or the transition claim's if that is worse.
func lockExitStatus(st *statusJSON) int {
	code := statusFree
	switch st.Lock {
	case "held", "legacy":
		code = statusHeld
	case "stale":
		code = statusStale
	case "unreadable", "permission_denied", "unsafe":
		code = statusBlocked
	}
	claim := statusFree
	switch st.Claim.State {
	case "held":
		claim = statusHeld
	case "stale":
		claim = statusStale
	case "crashed", "not_empty", "superseded_file", "permission_denied":
		claim = statusBlocked
	}
	return max(code, claim)
}

// isDirArg reports whether status was given a directory to list: ".", a
// path ending in a separator, or an existing directory (not followed
// through a symlink).
func isDirArg(path string) bool {
	if path == "." || path == ".." || strings.HasSuffix(path, "/") || strings.HasSuffix(path, string(filepath.Separator)) {
		return true
	}
	fi, err := exactfs.Lstat(path)
	return err == nil && fi.IsDir()
}

// namedLockRecord refuses a STATEFILE that is the lock record of another
// state file (x.json.lock when x.json.lock is a lock and x.json.lock.lock
// is not there): inspecting x.json.lock.lock would say "free" about the
// wrong lock without a word.
func namedLockRecord(cmd, path string) error {
	if !strings.HasSuffix(path, ".lock") || len(filepath.Base(path)) <= len(".lock") {
		return nil
	}
	if _, err := exactfs.Lstat(path + ".lock"); err == nil {
		return nil // a state file whose own name ends in .lock, with its lock
	}
	if _, err := exactfs.Lstat(path); err != nil {
		return nil
	}
	return usagef("%s is the lock of %s, not a state file: give the state file (exactfs %s %s)", path, stateFileOf(path), cmd, shellJoin([]string{stateFileOf(path)}))
}

// noteLockSuffix tells, on stderr, that a STATEFILE ending in .lock with
// nothing at that name has its own lock at .lock.lock.
func noteLockSuffix(e *env, path string) {
	if !strings.HasSuffix(path, ".lock") || len(filepath.Base(path)) <= len(".lock") {
		return
	}
	if _, err := exactfs.Lstat(path); err == nil {
		return
	}
	fmt.Fprintf(e.stderr, "note: the lock of STATEFILE %s is %s.lock; for the lock of %s, run 'exactfs status %s'\n",
		path, path, stateFileOf(path), shellJoin([]string{stateFileOf(path)}))
}

// statusDir lists every lock in dir: each name ending in .lock that is not
// a private name, as the lock of the state file it belongs to. A directory
// used as a STATEFILE itself has its lock beside it (dir.lock), listed
// last.
func statusDir(e *env, o *statusOptions, dir string) error {
	d, err := exactfs.OpenDir(dir)
	if err != nil {
		return err
	}
	names, err := d.ReadDirNames()
	d.Close()
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var states []string
	for _, n := range names {
		if exactfs.ClassifyName(n).Kind != exactfs.NamePublic {
			continue // a private name: residue, listed with its lock
		}
		// A lock is its record (x.lock) or, after a crash, only its
		// transition claim (x.lock.transition).
		for _, suffix := range []string{".lock", ".lock.transition"} {
			if sf, ok := strings.CutSuffix(n, suffix); ok && sf != "" && !seen[sf] {
				seen[sf] = true
				states = append(states, filepath.Join(dir, sf))
			}
		}
	}
	sort.Strings(states)
	if clean := filepath.Clean(dir); clean != "." && clean != "/" && clean != ".." {
		if _, err := exactfs.Lstat(clean + ".lock"); err == nil {
			states = append(states, clean)
		}
	}
	opts, root := identityOptions(o.configRoot, o.hostLocal), currentConfigRoot(o.configRoot)
	all := []*statusJSON{}
	worst, code := statusFree, exitOK
	for _, sf := range states {
		st, _, err := inspectLock(sf, opts, root, store.DefaultReapAge)
		if st == nil {
			fmt.Fprintf(e.stderr, "exactfs status: %s.lock: %v\n", sf, err)
			code = max(code, exitCode(err))
			worst = statusBlocked
			continue
		}
		if err == nil {
			err = recordError(st)
		}
		if err != nil {
			code = max(code, exitCode(err))
		}
		worst = max(worst, lockExitStatus(st))
		all = append(all, st)
		if !o.json {
			writeStatusLine(e.stdout, st)
		}
	}
	if o.json {
		if err := json.NewEncoder(e.stdout).Encode(all); err != nil {
			return err
		}
	} else if len(states) == 0 {
		fmt.Fprintf(e.stdout, "no locks in %s\n", dir)
	}
	if o.exitStatus {
		return exitStatus(worst)
	}
	return exitStatus(code)
}

// writeStatusLine is one lock in a directory listing.
func writeStatusLine(w io.Writer, st *statusJSON) {
	var what string
	switch st.Lock {
	case "free":
		what = "free"
	case "released":
		what = "free (released)"
	case "held":
		what = "held by " + describeHolder(st.Holder)
	case "stale":
		what = "stale (next lock call reclaims it): " + describeHolder(st.Holder)
	default:
		what = st.Lock + ": " + st.Detail
	}
	fmt.Fprintf(w, "%s: %s\n", st.LockPath, what)
	if st.Holder != nil && st.Holder.Command != "" && st.Lock == "held" {
		fmt.Fprintf(w, "  command: %s\n", st.Holder.Command)
	}
	if st.Claim.State != "none" {
		fmt.Fprintf(w, "  transition claim: %s\n", strings.ReplaceAll(st.Claim.State, "_", " "))
	}
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
	case "permission_denied":
		fmt.Fprintf(w, "%s: a record this user may not open: %s\n", st.LockPath, st.Detail)
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
		if st.Holder.Command != "" {
			fmt.Fprintf(w, "  command: %s\n", st.Holder.Command)
		}
		fmt.Fprintf(w, "  start time %s (%s), token %s\n", st.Holder.StartTime, orDash(st.Holder.StartTimeFormat), orDash(st.Holder.Token))
		fmt.Fprintln(w, "  the lock is respected until its holder releases it or is proved dead")
		for _, l := range foreignAdvice(st) {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	c := st.Claim
	if c.State == "none" {
		fmt.Fprintln(w, "transition claim: none")
	} else if c.AgeMs < 0 {
		fmt.Fprintf(w, "transition claim: %s\n", strings.ReplaceAll(c.State, "_", " "))
		if c.Detail != "" {
			fmt.Fprintf(w, "  %s\n", c.Detail)
		}
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

// permissionRecordError is status's answer for a lock record this user may
// not open (exit 74). It is no malformed record: its owner's lock calls
// take it as usual, and recover will not remove it.
type permissionRecordError struct{ lockPath, detail string }

func (p permissionRecordError) Error() string {
	return fmt.Sprintf("%s is a lock record this user may not open (%s); no lock call of this user will take it", p.lockPath, p.detail)
}

// permissionClaimError is status's and recover's answer for a transition
// claim directory this user may not read (exit 74): no lock call of this
// user takes the lock while it is there, and only its owner or root can
// remove it.
type permissionClaimError struct{ claimPath, detail string }

func (p permissionClaimError) Error() string {
	return fmt.Sprintf("%s is a transition claim this user may not read; no lock call of this user can take the lock while it is there", p.claimPath)
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
	if h.ThisBoot {
		return []string{
			"the record carries this machine's current boot id, so it was almost certainly written on this",
			"host, by a process using another config root (another user's, a --config-root, the config/ of a",
			"kept 'exactfs demo' directory). Pass that root (exactfs status --config-root DIR " + st.StateFile + "):",
			"judged with its host id, a dead holder is then reclaimed by 'exactfs recover --config-root DIR'.",
			"If no such root exists any more and you know the holder is gone, remove exactly this record:",
			"  " + rm + "   (exit 76, nothing removed, if it changed meanwhile)",
		}
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
	case h.ThisBoot && h.OtherConfigRoot == nil:
		where = "host id " + shortID(h.HostID) + " with this machine's boot id: probably this host under another --config-root"
	}
	pid := fmt.Sprintf("pid %d", h.Pid)
	if h.OtherPidNS {
		pid = fmt.Sprintf("pid %d in another pid namespace (ns %d)", h.Pid, h.PidNS)
	}
	return fmt.Sprintf("%s on %s, for %s — %s (%s)", pid, where, roundAge(time.Duration(h.AgeMs)*time.Millisecond), h.Verdict, h.Reason)
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
