package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/liveness"
	"github.com/exactfs/exactfs/statelock"
	"github.com/exactfs/exactfs/store"
)

// statusJSON is the stable JSON form of "exactfs status --json"; see the
// help of status for the schema. It is built from statelock.Inspect and a
// dry run of statelock.Recover: the CLI judges nothing itself.
type statusJSON struct {
	StateFile string      `json:"state_file"`
	LockPath  string      `json:"lock_path"`
	Lock      string      `json:"lock"` // free, released, held, stale, unreadable, permission_denied, legacy, unsafe
	Holder    *holderJSON `json:"holder"`
	Detail    string      `json:"detail,omitempty"`
	// RecordOwner is set for permission_denied: who owns the record this
	// process may not open.
	RecordOwner *recordOwner  `json:"record_owner,omitempty"`
	Claim       claimJSON     `json:"claim"`
	Residue     []residueJSON `json:"residue"`
	Recover     []actionJSON  `json:"recover"`
}

type holderJSON struct {
	Pid             int64  `json:"pid"`
	HostID          string `json:"host_id"`
	ThisHost        bool   `json:"this_host"`
	StartTime       string `json:"start_time"`
	StartTimeFormat string `json:"start_time_format"`
	Token           string `json:"token"`
	Kernel          bool   `json:"kernel"`
	AgeMs           int64  `json:"age_ms"`
	Verdict         string `json:"verdict"` // alive, dead, unknown
	Reason          string `json:"reason"`
	// OtherConfigRoot is set when the record names another host but was
	// written on this one, by a process that used another config root.
	OtherConfigRoot *otherRoot `json:"other_config_root,omitempty"`
	// PidNS is the record's pid namespace (0: not recorded); OtherPidNS
	// says it is not this process's, so the pid is not one ps shows here.
	PidNS      uint64 `json:"pid_ns,omitempty"`
	OtherPidNS bool   `json:"other_pid_ns,omitempty"`
	// ThisBoot: the record carries this machine's current boot id.
	ThisBoot bool `json:"this_boot,omitempty"`
	// Command is the live holder's command line, where it can be read
	// (Linux, this pid namespace, the record's start time still the pid's).
	Command string `json:"command,omitempty"`
}

// recordOwner is the owner of a lock record, for permission_denied.
type recordOwner struct {
	Uid  uint32 `json:"uid"`
	Mode string `json:"mode"` // octal, "0600"
}

type claimJSON struct {
	State   string `json:"state"` // none, held, stale, crashed, not_empty, superseded_file, permission_denied
	AgeMs   int64  `json:"age_ms"`
	Sidecar string `json:"sidecar,omitempty"`
	Detail  string `json:"detail,omitempty"`
	// Owner is the claim directory's owner, for permission_denied.
	Owner *recordOwner `json:"owner,omitempty"`
}

// claimPermissionDenied makes c the description of a claim directory at
// path that this user may not read: its owner, and who can remove it. Its
// age is unknown (the library could not describe it), not zero.
func claimPermissionDenied(c *claimJSON, path string) {
	c.State, c.AgeMs = "permission_denied", -1
	uid, mode, ok := fileOwner(path)
	if !ok {
		c.Detail = "this user may not read the claim directory; no lock call of this user can take the lock while it is there"
		return
	}
	c.Owner = &recordOwner{Uid: uid, Mode: fmt.Sprintf("%04o", mode)}
	c.Detail = fmt.Sprintf("a directory owned by %s, mode %04o, that this process (%s) may not read or remove; "+
		"no lock call of this user can take the lock while it is there. %s or root can remove it once no process of theirs uses the lock: rmdir %s",
		uidName(uid), mode, uidName(uint32(os.Geteuid())), uidName(uid), shellJoin([]string{path}))
}

type residueJSON struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"` // staging, quarantine, placeholder, removing, temp, movedir
	Size  int64  `json:"size"`
	AgeMs int64  `json:"age_ms"`
	// Note is the lock's verdict on the state file's own staging and temp
	// files: removed by the lock's next holder, or kept and why.
	Note string `json:"note,omitempty"`
	// Removable: the lock's sweep removes it (planned as sweep-residue).
	Removable bool `json:"removable,omitempty"`
}

type actionJSON struct {
	Kind     string `json:"kind"`
	Path     string `json:"path"`
	Evidence string `json:"evidence"`
}

// inspectLock describes the lock of stateFile. It refuses, before the
// library is called, a state file whose directory does not exist (the
// library would create it, and status must change nothing). An unsafe
// object at the lock path is described and also returned as an error, for
// exit 77.
//
// Its Recover list is the plan of 'exactfs recover' with the same flags
// (recoverPlan): status shows what recover --dry-run prints, and a real
// recover carries out exactly that plan.
func inspectLock(stateFile string, opts []statelock.Option, configRoot string, minAge time.Duration) (*statusJSON, []planStep, error) {
	d, _, err := openParent(stateFile)
	if err != nil {
		return nil, nil, err
	}
	if d == nil {
		return nil, nil, usagef("%q names a directory, not a state file", stateFile)
	}
	d.Close()
	s, err := statelock.Inspect(stateFile, opts...)
	if err != nil {
		return nil, nil, err
	}
	lib, err := statelock.Recover(stateFile, true, opts...)
	if err != nil {
		return nil, nil, err
	}
	st := &statusJSON{StateFile: stateFile, LockPath: s.LockPath, Lock: string(s.State), Detail: s.Detail,
		Residue: []residueJSON{}, Recover: []actionJSON{}}
	if h := s.Holder; h != nil && h.Pid > 0 && s.State != statelock.StateReleased {
		st.Holder = holderOf(h)
		if s.State == statelock.StateHeld && !h.ThisHost && h.HostID != "" {
			st.Holder.OtherConfigRoot = findOtherRoot(stateFile, h.HostID, configRoot, opts)
		}
		if x, ok := readRecordExtras(s.LockPath); ok {
			st.Holder.PidNS, st.Holder.OtherPidNS = x.PidNS, otherPidNS(x.PidNS)
			st.Holder.ThisBoot = thisBoot(x.BootID)
		}
		if h.ThisHost && h.Verdict == "alive" && !st.Holder.OtherPidNS {
			st.Holder.Command = holderCommand(h.Pid, h.StartTime, h.StartTimeFormat)
		}
	}
	if s.State == statelock.StateUnreadable && strings.Contains(s.Detail, "("+string(exactfs.CodePermissionDenied)+")") {
		// Not a malformed record: one this user may not open. No lock call
		// of this user will take it, and recover will not remove it; its
		// owner's calls take it as usual.
		st.Lock = "permission_denied"
		if uid, mode, ok := fileOwner(s.LockPath); ok {
			st.RecordOwner = &recordOwner{Uid: uid, Mode: fmt.Sprintf("%04o", mode)}
			st.Detail = fmt.Sprintf("owned by %s, mode %04o; this process (%s) may not open it", uidName(uid), mode, uidName(uint32(os.Geteuid())))
		}
	}
	if s.State == statelock.StateLegacy {
		st.Detail = s.Legacy
	}
	st.Claim = claimOf(s.Claim, lib)
	if c := s.Claim; c.Present && c.Directory && !c.Empty && strings.Contains(c.Why, "("+string(exactfs.CodePermissionDenied)+")") {
		// Not a claim with something in it: one this user may not read
		// (another uid's 0700 directory, planted in a shared sticky
		// directory, or left by a peer of another uid). No lock call of
		// this user can take the claim, and neither recover nor this user
		// can remove it: say whose it is and who can.
		claimPermissionDenied(&st.Claim, s.LockPath+".transition")
	}
	for _, r := range s.Residue {
		st.Residue = append(st.Residue, residueJSON{Name: r.Name, Kind: r.Kind, Size: r.Size, AgeMs: r.Age.Milliseconds(), Note: r.Note, Removable: r.Removable})
	}
	plan := recoverPlan(stateFile, st, lib, minAge)
	for _, p := range plan {
		st.Recover = append(st.Recover, actionJSON{Kind: p.Kind, Path: p.Path, Evidence: p.Evidence})
	}
	if s.State == statelock.StateUnsafe {
		// The library's detail may end with the code already; the
		// error says it once, at its end.
		detail := strings.TrimSuffix(s.Detail, " ("+string(exactfs.CodeNotRegularFile)+")")
		return st, plan, &exactfs.Error{Op: "status", Path: s.LockPath, Code: exactfs.CodeNotRegularFile, Detail: detail}
	}
	return st, plan, nil
}

// planStep is one action of 'exactfs recover': a step of statelock.Recover
// (lib), the reclaim of a lock whose holder is provably dead (host: judged
// with another config root's identity, else nil), or a staging file for
// the store reaper.
type planStep struct {
	Kind, Path, Evidence string
	lib                  bool
	host                 *liveness.HostIdentity
}

// Kinds of plan steps beyond statelock.Recover's.
const (
	stepReclaim = "reclaim-lock" // take the lock once and release it
	stepReap    = "reap-staging" // the store reaper removes it if no process has it open
	// The lock's own residue sweep removes it: done by taking the lock once,
	// as a reclaim does (statelock sweeps a state file's staging and temp
	// files on a process's first acquisition and on every reclaim).
	stepSweep = "sweep-residue"
)

// swept reports whether the lock's sweep, not the reaper, answers for r
// (statelock.Inspect proved it removable: unopened, a temp file's writer
// dead).
func swept(r residueJSON) bool { return r.Removable }

// recoverPlan is what 'exactfs recover' does, given what Inspect and a dry
// run of statelock.Recover found. It only promises what the real run will
// attempt: a staging file is planned only where the reaper runs (an
// owner-only directory) and when it is a single-link file older than
// minAge; whether a process still has it open is the one thing left for
// the reaper to find out.
func recoverPlan(stateFile string, st *statusJSON, lib []statelock.Action, minAge time.Duration) []planStep {
	var plan []planStep
	claimDone := false
	for _, a := range lib {
		plan = append(plan, planStep{Kind: a.Kind, Path: a.Path, Evidence: a.Evidence, lib: true})
		if a.Kind == "remove-claim" {
			claimDone = true
		}
	}
	switch {
	case st.Lock == "stale" && st.Holder != nil:
		plan = append(plan, planStep{Kind: stepReclaim, Path: st.LockPath,
			Evidence: fmt.Sprintf("holder pid %d is dead: %s", st.Holder.Pid, st.Holder.Reason)})
	case st.Claim.State == "stale" && !claimDone:
		plan = append(plan, planStep{Kind: stepReclaim, Path: st.LockPath, Evidence: st.Claim.Detail})
	case st.Holder != nil && st.Holder.OtherConfigRoot != nil && st.Holder.OtherConfigRoot.Verdict == "dead":
		o := st.Holder.OtherConfigRoot
		plan = append(plan, planStep{Kind: stepReclaim, Path: st.LockPath, host: &o.host,
			Evidence: fmt.Sprintf("written on this host by a process using config root %s; judged with that root's host id, holder pid %d is dead: %s",
				o.Path, st.Holder.Pid, o.Reason)})
	}
	dir := filepath.Dir(stateFile)
	for _, r := range st.Residue {
		if swept(r) {
			plan = append(plan, planStep{Kind: stepSweep, Path: filepath.Join(dir, r.Name), Evidence: r.Note})
		}
	}
	reap := stagingToReap(dir, st.Residue, minAge)
	if len(reap) == 0 || reaperRefuses(dir) != nil {
		return plan
	}
	for _, c := range reap {
		if c.unknown != "" {
			continue // the reaper would keep it at every run: left for a person (writeLeft)
		}
		plan = append(plan, planStep{Kind: stepReap, Path: c.path, Evidence: fmt.Sprintf(
			"staging file of an interrupted write, %d bytes, last changed %s ago; removed only if no process has it open",
			c.id.Size, roundAge(c.age))})
	}
	return plan
}

// stagingCandidate is a staging file the reaper would look at.
type stagingCandidate struct {
	path string
	id   exactfs.Identity
	age  time.Duration
	// unknown says why the kernel cannot tell here whether a process has
	// the file open (no lease probe: macOS, the BSDs, a network
	// filesystem), "" when it can. The reaper removes only what it proves
	// unopened, so such a file is never planned: a plan it cannot carry
	// out would make every run exit 75 and advise a retry that cannot help.
	unknown string
}

// stagingToReap returns the staging residue the reaper would consider: a
// regular file with a single link whose last change (the later of mtime
// and ctime, as the reaper measures it: an exchange moves only the ctime)
// is at least minAge ago.
func stagingToReap(dir string, residue []residueJSON, minAge time.Duration) []stagingCandidate {
	var out []stagingCandidate
	for _, r := range residue {
		if r.Kind != "staging" || swept(r) {
			continue
		}
		p := filepath.Join(dir, r.Name)
		id, err := exactfs.IdentityOf(p)
		if err != nil || !id.Mode.IsRegular() || id.Nlink != 1 {
			continue
		}
		age := time.Since(time.Unix(0, max(id.MtimeNs, id.CtimeNs)))
		if age >= minAge {
			out = append(out, stagingCandidate{path: p, id: id, age: age, unknown: writerUnknown(p, id)})
		}
	}
	return out
}

// writerUnknown says why the kernel cannot tell whether a process has the
// file at p (of identity id) open, or "" when it can (or p is no longer
// that file: the reaper, which captures it again, decides then).
func writerUnknown(p string, id exactfs.Identity) string {
	d, err := exactfs.OpenDir(filepath.Dir(p))
	if err != nil {
		return ""
	}
	defer d.Close()
	f, err := d.OpenFile(filepath.Base(p), os.O_RDONLY, 0) // no link followed
	if err != nil {
		return ""
	}
	defer f.Close()
	if cur, err := exactfs.StatFile(f); err != nil || !cur.SameInode(id) {
		return ""
	}
	if a, why := exactfs.ProbeWriter(f); a == exactfs.AnswerUnknown {
		return why
	}
	return ""
}

// reaperRefuses says why the store reaper cannot run in dir (it runs only
// in an owner-only directory), or returns nil. It opens and closes the
// store, which changes nothing.
func reaperRefuses(dir string) error {
	s, err := store.Open(dir)
	if err != nil {
		return err
	}
	return s.Close()
}

func holderOf(h *statelock.Holder) *holderJSON {
	return &holderJSON{Pid: h.Pid, HostID: h.HostID, ThisHost: h.ThisHost, StartTime: h.StartTime,
		StartTimeFormat: h.StartTimeFormat, Token: h.Token, Kernel: h.Kernel, AgeMs: h.Age.Milliseconds(),
		Verdict: h.Verdict, Reason: h.Reason}
}

func claimOf(c statelock.ClaimStatus, plan []statelock.Action) claimJSON {
	j := claimJSON{AgeMs: c.Age.Milliseconds(), Sidecar: c.SidecarVerdict, Detail: c.Why}
	switch {
	case !c.Present:
		return claimJSON{State: "none"}
	case !c.Directory:
		j.State = "superseded_file"
	case c.Crashed:
		j.State = "stale"
	case !c.Empty:
		j.State = "not_empty"
	default:
		j.State = "held"
		for _, a := range plan {
			if a.Kind == "remove-claim" {
				j.State = "crashed"
			}
		}
	}
	return j
}

// waitingFor describes, for the "waiting for ..." line, who holds the lock.
func waitingFor(stateFile string, opts []statelock.Option) string {
	s, err := statelock.Inspect(stateFile, opts...)
	if err != nil || s.Holder == nil || s.State == statelock.StateReleased || s.Holder.Pid <= 0 {
		return ""
	}
	where := "on another host"
	switch {
	case s.Holder.ThisHost:
		where = "on this host"
	case s.Holder.HostID == "":
		where = "on an unnamed host"
	}
	pid := fmt.Sprintf("pid %d", s.Holder.Pid)
	if x, ok := readRecordExtras(s.LockPath); ok {
		pid = pidWhere(s.Holder.Pid, x.PidNS)
	}
	return fmt.Sprintf("%s %s for %s", pid, where, roundAge(s.Holder.Age))
}

func roundAge(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}
