package main

import (
	"fmt"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/statelock"
)

// statusJSON is the stable JSON form of "exactfs status --json"; see the
// help of status for the schema. It is built from statelock.Inspect and a
// dry run of statelock.Recover: the CLI judges nothing itself.
type statusJSON struct {
	StateFile string        `json:"state_file"`
	LockPath  string        `json:"lock_path"`
	Lock      string        `json:"lock"` // free, released, held, stale, unreadable, legacy, unsafe
	Holder    *holderJSON   `json:"holder"`
	Detail    string        `json:"detail,omitempty"`
	Claim     claimJSON     `json:"claim"`
	Residue   []residueJSON `json:"residue"`
	Recover   []actionJSON  `json:"recover"`
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
}

type claimJSON struct {
	State   string `json:"state"` // none, held, stale, crashed, not_empty, superseded_file
	AgeMs   int64  `json:"age_ms"`
	Sidecar string `json:"sidecar,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

type residueJSON struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"` // staging, quarantine, placeholder, removing
	Size  int64  `json:"size"`
	AgeMs int64  `json:"age_ms"`
	Note  string `json:"note,omitempty"` // the state file's staging/temp files: kept (why) or removable
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
func inspectLock(stateFile string, opts []statelock.Option) (*statusJSON, error) {
	d, _, err := openParent(stateFile)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, usagef("%q names a directory, not a state file", stateFile)
	}
	d.Close()
	s, err := statelock.Inspect(stateFile, opts...)
	if err != nil {
		return nil, err
	}
	plan, err := statelock.Recover(stateFile, true, opts...)
	if err != nil {
		return nil, err
	}
	st := &statusJSON{StateFile: stateFile, LockPath: s.LockPath, Lock: string(s.State), Detail: s.Detail,
		Residue: []residueJSON{}, Recover: []actionJSON{}}
	if h := s.Holder; h != nil && h.Pid > 0 && s.State != statelock.StateReleased {
		st.Holder = holderOf(h)
	}
	if s.State == statelock.StateLegacy {
		st.Detail = s.Legacy
	}
	for _, a := range plan {
		st.Recover = append(st.Recover, actionJSON{Kind: a.Kind, Path: a.Path, Evidence: a.Evidence})
	}
	st.Claim = claimOf(s.Claim, plan)
	for _, r := range s.Residue {
		st.Residue = append(st.Residue, residueJSON{Name: r.Name, Kind: r.Kind, Size: r.Size, AgeMs: r.Age.Milliseconds(), Note: r.Note})
	}
	if s.State == statelock.StateUnsafe {
		return st, &exactfs.Error{Op: "status", Path: s.LockPath, Code: exactfs.CodeNotRegularFile, Detail: s.Detail}
	}
	return st, nil
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
	return fmt.Sprintf("pid %d %s for %s", s.Holder.Pid, where, roundAge(s.Holder.Age))
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
