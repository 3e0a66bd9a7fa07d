package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/liveness"
	"github.com/exactfs/exactfs/statelock"
)

// Names beside a state file F (SPEC §4.1).
const (
	lockSuffix       = ".lock"
	claimSuffix      = ".lock.transition"
	sidecarSuffix    = ".lock.transition.owner"
	lockQuarantine   = ".gjc-delete-session-state-lock-"
	claimMinAgeForOp = 10 * time.Second // a crashed claim younger than this is left alone by recover
)

// statusJSON is the stable JSON form of "exactfs status --json"; see the
// help of status for the schema.
type statusJSON struct {
	StateFile string        `json:"state_file"`
	LockPath  string        `json:"lock_path"`
	Lock      string        `json:"lock"` // absent, free, held, malformed, legacy_directory, unsafe
	Holder    *holderJSON   `json:"holder"`
	Detail    string        `json:"detail,omitempty"`
	Claim     claimJSON     `json:"claim"`
	Residue   []residueJSON `json:"residue"`
}

type holderJSON struct {
	Pid             int64  `json:"pid"`
	HostID          string `json:"host_id"`
	ThisHost        bool   `json:"this_host"`
	StartTime       string `json:"start_time"`
	StartTimeFormat string `json:"start_time_format"`
	Token           string `json:"token,omitempty"`
	AgeMs           int64  `json:"age_ms"`
	Verdict         string `json:"verdict"` // alive, dead, unknown
	Reason          string `json:"reason"`
}

type claimJSON struct {
	State  string      `json:"state"` // none, held, releasing, stale, crashed, not_empty, superseded_file, unsafe
	AgeMs  int64       `json:"age_ms,omitempty"`
	Holder *holderJSON `json:"holder"`
	Detail string      `json:"detail,omitempty"`
}

type residueJSON struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"` // staging, quarantine, placeholder, removing
	Size  int64  `json:"size"`
	AgeMs int64  `json:"age_ms"`
}

// inspector reads the lock files of one state file and judges what it finds.
// It never writes, never takes the claim, and opens nothing that is not a
// regular file (every open is no-follow and non-blocking).
type inspector struct {
	dir   *exactfs.Dir
	base  string
	judge liveness.Judge
	now   time.Time
}

func newInspector(stateFile, configRoot string, hostLocal bool) (*inspector, error) {
	d, name, err := openParent(stateFile)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, usagef("%q names a directory, not a state file", stateFile)
	}
	host := loadHost(configRoot)
	return &inspector{dir: d, base: name, judge: liveness.Judge{Host: host, HostLocal: hostLocal}, now: time.Now()}, nil
}

func (in *inspector) close() { in.dir.Close() }

func (in *inspector) age(mtimeNs int64) time.Duration { return in.now.Sub(time.Unix(0, mtimeNs)) }

// inspect describes the lock of the state file. An unsafe object at the lock
// path is described (by lstat only) and returned with an error for exit 77.
func (in *inspector) inspect(stateFile string) (*statusJSON, error) {
	st := &statusJSON{StateFile: stateFile, LockPath: stateFile + lockSuffix, Residue: []residueJSON{}}
	var unsafeErr error
	lockName := in.base + lockSuffix
	fi, err := in.dir.Lstat(lockName)
	switch {
	case errors.Is(err, exactfs.ErrNotFound):
		st.Lock = "absent"
	case err != nil:
		return nil, err
	case fi.IsDir():
		st.Lock = "legacy_directory"
		st.Detail = "a lock directory left by an older runtime (" + lockName + "/info); statelock judges and reclaims it when its owner is provably dead"
		st.Holder = in.legacyHolder(lockName)
	case !fi.Mode().IsRegular():
		st.Lock = "unsafe"
		st.Detail = kindName(fi.Mode()) + " is at the lock path; no lock writes one, and exactfs will neither read, follow nor remove it"
		unsafeErr = refusedType("status", st.LockPath, fi.Mode())
	default:
		st.Lock, st.Holder, st.Detail = in.record(lockName)
	}
	st.Claim = in.claim()
	st.Residue = in.residue()
	return st, unsafeErr
}

// record judges the owner record at name: free (a released tombstone),
// held, or malformed.
func (in *inspector) record(name string) (state string, h *holderJSON, detail string) {
	f, err := in.dir.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return "unreadable", nil, err.Error()
	}
	defer f.Close()
	data, id, err := exactfs.CaptureFile(f)
	if err != nil {
		return "unreadable", nil, err.Error()
	}
	rec, perr := statelock.ParseRecord(data)
	if perr != nil {
		return "malformed", nil, fmt.Sprintf("%d bytes that are not an owner record (%v), last written %s ago", len(data), perr, roundAge(in.age(id.MtimeNs)))
	}
	if rec.Released {
		return "free", nil, "a released tombstone (kept: the next holder reuses it)"
	}
	return "held", in.holder(rec, f, id), ""
}

// holder judges rec. Records that say an exactfs process wrote them on this
// host and boot are judged by the kernel first: such a holder keeps an OFD
// lock on the record, so none held means it is gone.
func (in *inspector) holder(rec *statelock.Record, f *os.File, id exactfs.Identity) *holderJSON {
	h := &holderJSON{Pid: rec.Pid, HostID: rec.HostID, ThisHost: in.judge.Host.IsLocal(rec.HostID),
		StartTime: rec.StartTime, StartTimeFormat: rec.StartTimeFormat, Token: rec.Token, AgeMs: in.age(id.MtimeNs).Milliseconds()}
	if rec.Kernel() && h.ThisHost && f != nil {
		if boot, err := liveness.BootID(); err == nil && boot == rec.BootID {
			if held, known := ofdHeld(f); known {
				if held {
					h.Verdict, h.Reason = "alive", "the holder's kernel lock on the record is held"
				} else {
					h.Verdict, h.Reason = "dead", "no kernel lock is held on the record: its holder's descriptor is gone"
				}
				return h
			}
		}
	}
	j := in.judge.Judge(liveness.Owner{Pid: int(rec.Pid), StartTime: rec.StartTime, StartTimeFormat: rec.StartTimeFormat,
		HostID: rec.HostID, BootID: rec.BootID, PidfdIno: rec.PidfdIno, PidNS: rec.PidNS})
	h.Verdict, h.Reason = j.Verdict.String(), j.Reason
	return h
}

// legacyHolder reads F.lock/info, a legacy directory lock's owner.
func (in *inspector) legacyHolder(lockName string) *holderJSON {
	d, err := in.dir.OpenDir(lockName)
	if err != nil {
		return nil
	}
	defer d.Close()
	data, id, err := d.Capture("info")
	if err != nil {
		return nil
	}
	var info struct {
		Pid       int64  `json:"pid"`
		StartTime string `json:"start_time"`
		Format    string `json:"start_time_format"`
		HostID    string `json:"owner_host_id"`
	}
	if json.Unmarshal(data, &info) != nil || info.Pid <= 0 {
		return nil
	}
	rec := &statelock.Record{Pid: info.Pid, StartTime: info.StartTime, StartTimeFormat: info.Format, HostID: info.HostID}
	return in.holder(rec, nil, id)
}

// claim describes the transition claim F.lock.transition and its sidecar.
func (in *inspector) claim() claimJSON {
	name := in.base + claimSuffix
	fi, err := in.dir.Lstat(name)
	switch {
	case errors.Is(err, exactfs.ErrNotFound):
		return claimJSON{State: "none"}
	case err != nil:
		return claimJSON{State: "unreadable", Detail: err.Error()}
	case fi.Mode().IsRegular():
		return claimJSON{State: "superseded_file", AgeMs: in.now.Sub(fi.ModTime()).Milliseconds(),
			Detail: "a claim file of the superseded protocol; statelock reclaims it by the rules of F.lock"}
	case !fi.IsDir():
		return claimJSON{State: "unsafe", Detail: kindName(fi.Mode()) + " is at the claim path; exactfs will not touch it"}
	}
	c := claimJSON{AgeMs: in.now.Sub(fi.ModTime()).Milliseconds()}
	if d, err := in.dir.OpenDir(name); err == nil {
		names, _ := d.ReadDirNames()
		d.Close()
		if len(names) > 0 {
			c.State, c.Detail = "not_empty", fmt.Sprintf("the claim directory holds %d entries; it is never removed automatically, inspect it by hand", len(names))
			return c
		}
	}
	young := time.Duration(c.AgeMs)*time.Millisecond < time.Second
	sideName := in.base + sidecarSuffix
	f, err := in.dir.OpenFile(sideName, os.O_RDONLY, 0)
	if err != nil {
		c.State, c.Detail = "crashed", "the claim directory has no readable sidecar ("+exactfsCode(err)+"); only 'exactfs recover' removes it"
		if young {
			c.State, c.Detail = "held", "just taken; its sidecar is not written yet"
		}
		return c
	}
	defer f.Close()
	data, id, err := exactfs.CaptureFile(f)
	rec, perr := statelock.ParseRecord(data)
	switch {
	case err != nil || perr != nil:
		c.State = "crashed"
		c.Detail = fmt.Sprintf("the sidecar holds %d bytes that are not an owner record; only 'exactfs recover' removes this claim", len(data))
		if young || in.age(id.MtimeNs) < time.Second {
			c.State, c.Detail = "held", "just taken; its sidecar is being written"
		}
	case rec.Released && in.age(id.MtimeNs) >= time.Second:
		c.State, c.Detail = "stale", "the sidecar is a tombstone: its holder died between releasing it and removing the directory; the next lock call reclaims it"
	case rec.Released:
		c.State, c.Detail = "releasing", "the holder is giving the claim back"
	default:
		c.Holder = in.holder(rec, f, id)
		c.State = "held"
		if c.Holder.Verdict == "dead" {
			c.State, c.Detail = "stale", "its holder is dead; the next lock call reclaims it"
		}
	}
	return c
}

// residue lists private names beside the state file that crashes leave.
func (in *inspector) residue() []residueJSON {
	names, err := in.dir.ReadDirNames()
	if err != nil {
		return []residueJSON{}
	}
	sort.Strings(names)
	out := []residueJSON{}
	for _, n := range names {
		kind := ""
		if dest, ok := exactfs.StagingTarget(n); ok && dest == in.base {
			kind = "staging"
		} else if strings.HasPrefix(n, lockQuarantine) || strings.HasPrefix(n, rmQuarantinePrefix) {
			kind = "quarantine"
		} else if strings.HasPrefix(n, exactfs.PlaceholderPrefix) {
			kind = "placeholder"
		} else if n == in.base+lockSuffix+exactfs.RemovingSuffix || n == in.base+claimSuffix+exactfs.RemovingSuffix {
			kind = "removing"
		}
		if kind == "" {
			continue
		}
		r := residueJSON{Name: n, Kind: kind}
		if fi, err := in.dir.Lstat(n); err == nil {
			r.Size, r.AgeMs = fi.Size(), in.now.Sub(fi.ModTime()).Milliseconds()
		}
		out = append(out, r)
	}
	return out
}

func exactfsCode(err error) string {
	if c := exactfs.CodeOf(err); c != "" {
		return string(c)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return "absent"
	}
	return err.Error()
}
