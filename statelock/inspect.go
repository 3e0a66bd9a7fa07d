package statelock

import (
	"errors"
	"io/fs"
	"sort"
	"time"

	"github.com/exactfs/exactfs"
)

// LockState says what occupies F.lock.
type LockState string

// Lock states reported by Inspect.
const (
	StateFree       LockState = "free"       // no F.lock at all
	StateReleased   LockState = "released"   // a released tombstone: free to take
	StateHeld       LockState = "held"       // a record whose owner is alive or not provably dead
	StateStale      LockState = "stale"      // a record whose owner is provably dead: the next Lock reclaims it
	StateUnreadable LockState = "unreadable" // malformed or changing bytes: kept
	StateLegacy     LockState = "legacy"     // a legacy F.lock/ directory
	StateUnsafe     LockState = "unsafe"     // a symlink, FIFO, socket or device: refused
)

// Holder describes an owner record.
type Holder struct {
	Pid             int64
	HostID          string // the host it is judged by (owner_host_id, or pidns_host_id beside pid_ns); "" when none
	ThisHost        bool   // HostID is this host's current or legacy id
	StartTime       string
	StartTimeFormat string
	Token           string
	Kernel          bool          // written by exactfs, backed by an OFD lock while held
	Modified        time.Time     // mtime of the record's inode
	Age             time.Duration // since Modified
	Verdict         string        // "dead", "alive" or "unknown"
	Reason          string        // why, for people
	Description     string        // one line, as in error messages
}

// ClaimStatus describes the transition claim F.lock.transition.
type ClaimStatus struct {
	Present        bool
	Directory      bool // false: a superseded regular-file claim
	Empty          bool // an exact tree snapshot shows an empty directory
	Age            time.Duration
	SidecarPresent bool   // F.lock.transition.owner is readable
	SidecarVerdict string // the sidecar owner's verdict, for people
	Crashed        bool   // a crashed claim: the next Lock reclaims it
	Why            string // the reason for Crashed, or why it is kept
}

// Residue is a private name in the directory left by an interrupted
// operation, or a TypeScript peer's temporary state file.
type Residue struct {
	Name string
	Kind string // "quarantine", "placeholder", "removing", "staging", "temp" or "movedir"
	Size int64
	Age  time.Duration
	// For the state file's own staging and temporary files (residue.go):
	// Removed says the holder that swept them removed this one (Held.Residue);
	// Removable says the sweep would remove it now (Inspect): the next
	// process to take this lock, or to reclaim it, does; Note says why it
	// was, or would be, removed or kept. For a "movedir" directory (an
	// exact directory move killed between its renames) Note says whether
	// Recover removes it, or why it is kept.
	Removed   bool
	Removable bool
	Note      string
}

// Status is what Inspect found.
type Status struct {
	LockPath string
	State    LockState
	Holder   *Holder // for released, held, stale
	Legacy   string  // for StateLegacy: the verdict on the directory
	Detail   string  // for unreadable and unsafe
	Claim    ClaimStatus
	Residue  []Residue
}

// Inspect describes the lock of stateFile without changing anything: what
// occupies F.lock and the verdict on its owner, the transition claim and
// its sidecar, and residue in the directory.
func Inspect(stateFile string, opts ...Option) (Status, error) {
	l, err := openLocker(stateFile, opts, false)
	if err != nil {
		return Status{}, err
	}
	defer l.close()
	st := Status{LockPath: l.lockPath}
	fi, err := l.dir.Lstat(l.lockName)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		st.State = StateFree
	case err != nil:
		return st, lockError(l.lockPath, ReasonInspectionFailed, 0, 0, "", err)
	case fi.IsDir():
		st.State = StateLegacy
		tree, err := l.captureTree(l.lockName)
		if err != nil {
			st.Legacy = "cannot be described exactly: " + err.Error()
		} else {
			v := l.judgeLegacy(tree)
			st.Legacy = v.why
			if v.stale {
				st.Legacy = "stale (reclaimable): " + v.why
			}
		}
	case !fi.Mode().IsRegular():
		st.State = StateUnsafe
		st.Detail = unsafePath(l, l.lockName, fi.Mode()).Error()
	default:
		f, s, err := l.openCapture(l.lockName)
		if err != nil {
			st.State, st.Detail = StateUnreadable, err.Error()
			if unsafeType(err) {
				st.State = StateUnsafe
			}
			break
		}
		v := l.judgeRecord(s, f)
		distrust, _ := l.distrustFile(f)
		f.Close()
		st.Holder = l.holder(s, v)
		if distrust != "" {
			// Not ours to reuse (trust.go): say so, whatever the state.
			st.Detail = "F.lock: " + distrust + "; it is never reused: the next lock replaces it where the " +
				"directory allows, else refuses (lock_object_untrusted)"
		}
		switch {
		case s.released():
			st.State = StateReleased
		case s.rec == nil && !v.dead():
			st.State, st.Detail = StateUnreadable, v.Reason
		case v.dead():
			st.State = StateStale
		default:
			st.State = StateHeld
		}
	}
	if fi, err := l.dir.Lstat(l.sidecar); err == nil && !fi.Mode().IsRegular() {
		// Every lock call takes the claim, and refuses a sidecar that is
		// not a regular file (unsafe_lock_path_type): whatever F.lock
		// says, the lock cannot be taken, and status must say so.
		st.State = StateUnsafe
		st.Detail = unsafePath(l, l.sidecar, fi.Mode()).Error() + "; every lock call refuses it until it is removed by hand"
	}
	cs := l.inspectClaim()
	st.Claim = ClaimStatus{Present: cs.present, Directory: cs.dir, SidecarPresent: cs.side != nil,
		SidecarVerdict: cs.verdict, Crashed: cs.stale, Why: cs.why}
	if cs.tree != nil {
		st.Claim.Empty = len(cs.tree.Entries) == 1
		st.Claim.Age = age(cs.tree.Root())
	}
	st.Residue, err = l.residue()
	if err != nil {
		return st, lockError(l.lockPath, ReasonInspectionFailed, 0, 0, "", err)
	}
	for i := range st.Residue {
		if r := &st.Residue[i]; l.stateResidue(*r) {
			if keep := l.sweepOne(*r, false); keep != "" {
				r.Note = "kept: " + keep
			} else {
				r.Removable = true
				r.Note = "removable: no process has it open"
				if r.Kind == "temp" {
					r.Note += " and its writer is dead"
				}
				r.Note += "; the next process to take this lock, or the next holder to reclaim it from a dead one, removes it"
			}
		}
		if r := &st.Residue[i]; r.Kind == "movedir" {
			if evidence, kept := l.judgeMoveAside(l.captureMoveAside(r.Name)); evidence != "" {
				r.Note = "exactfs recover removes it: " + evidence
			} else {
				r.Note = "kept: " + kept
			}
		}
	}
	return st, nil
}

func (l *locker) holder(s *snapshot, v verdict) *Holder {
	h := &Holder{Modified: unixTime(s.id.MtimeNs), Age: age(s.id), Verdict: v.Verdict.String(),
		Reason: v.Reason, Description: l.describe(s, v)}
	if r := s.rec; r != nil {
		// The host the record is judged by (verdict.go): a holder in
		// another pid namespace writes pidns_host_id for owner_host_id.
		h.Pid, h.HostID, h.StartTime, h.StartTimeFormat, h.Token, h.Kernel =
			r.Pid, judgedHost(r), r.StartTime, r.StartTimeFormat, r.Token, r.Kernel()
		h.ThisHost = h.HostID != "" && l.host.IsLocal(h.HostID)
	}
	return h
}

// residue lists private names in the lock's directory that belong to this
// state file's lock or to exact primitives working in the directory.
func (l *locker) residue() ([]Residue, error) {
	names, err := l.dir.ReadDirNames()
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []Residue
	for _, n := range names {
		kind := ""
		switch {
		case exactfs.ClassifyName(n).Kind == exactfs.NameLockQuarantine:
			kind = "quarantine"
		case exactfs.ClassifyName(n).Kind == exactfs.NamePlaceholder:
			kind = "placeholder"
		case exactfs.ClassifyName(n).Kind == exactfs.NameMoveDir:
			kind = "movedir"
		case n == l.claim+exactfs.RemovingSuffix || n == l.lockName+exactfs.RemovingSuffix:
			kind = "removing"
		case l.isTempName(n):
			kind = "temp"
		default:
			if dest, ok := exactfs.StagingTarget(n); ok && (dest == l.base || dest == l.lockName || dest == l.sidecar) {
				kind = "staging"
			}
		}
		if kind == "" {
			continue
		}
		r := Residue{Name: n, Kind: kind}
		if fi, err := l.dir.Lstat(n); err == nil {
			r.Size, r.Age = fi.Size(), time.Since(fi.ModTime())
		}
		out = append(out, r)
	}
	return out, nil
}
