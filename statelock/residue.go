package statelock

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/liveness"
)

// Crash residue of the state file, swept by the next holder of the lock.
//
// A writer killed during Update's durable write leaves its staged file
// .F.<uuid>.replacement (exactfs WriteFile) beside F; a TypeScript peer
// killed during its write leaves F.tmp-<pid>-<uuid>; a locker killed while
// publishing an owner record leaves .F.lock.<uuid>.staging (or the
// sidecar's). Nothing else removes them soon (Recover waits 15 minutes), so
// a holder removes them, under the lock, when:
//   - this acquisition reclaimed the lock from a dead holder (a writer
//     killed inside the lock is exactly how such files are left), or it is
//     this process's first acquisition of the lock of F (a crash whose lock
//     was reclaimed by a caller that does not sweep, or by a version that
//     did not);
//   - the file is a regular file with one link, not F itself, and no
//     process on this host has it open (exactfs.ProbeUnopened: the kernel's write
//     lease probe; an exactfs writer keeps its staged file open from its
//     creation to its commit, so an unopened one is a dead writer's);
//   - for a TypeScript temp file also: its pid is gone or a zombie (the
//     reference closes its temp file before the rename, so "unopened"
//     alone does not prove its writer gone);
//
// and then by exact unlink of the identity just proved (a file that changes
// meanwhile survives). Anything else carrying such a name (a symlink, a
// hard link, a file someone holds open, a live pid, a filesystem where the
// kernel cannot tell) is kept, and reported with the reason: in
// Held.Residue for the sweep, in Inspect's Status.Residue for a look.
// Holding the lock is what makes the proof sufficient: no cooperating
// writer of F, Go or TypeScript, is between its staging and its commit
// while we hold it. The rules themselves are verdict.go's (5. Crash
// residue); this file finds the names and acts on the verdicts.

// tsTempName matches the suffix of a TypeScript reference worker's temp
// file after F: ".tmp-<pid>-<uuid>".
var tsTempName = regexp.MustCompile(`^\.tmp-([1-9][0-9]{0,9})-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// isTempName reports whether n is a TypeScript peer's temp file of F.
func (l *locker) isTempName(n string) bool {
	rest, ok := strings.CutPrefix(n, l.base)
	return ok && tsTempName.MatchString(rest)
}

// tempPid is the writer's pid in a temp file's name.
func (l *locker) tempPid(n string) int {
	m := tsTempName.FindStringSubmatch(strings.TrimPrefix(n, l.base))
	if m == nil {
		return 0
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

// swept remembers the state files whose lock this process has held once
// (and so swept once), by their directory's device and inode. A directory
// removed and made again can get the same inode; its first holder creates
// F.lock, and an acquisition that creates F.lock sweeps whatever this map
// says (takeRecord sets sweepDue), so the map never hides a new directory.
// It keeps no descriptor open: that would keep the filesystem from being
// unmounted. A plain map under a mutex: no allocation per lock.
var (
	sweptMu sync.Mutex
	swept   = map[sweptKey]bool{}
)

type sweptKey struct {
	dev, ino uint64 // the directory's
	base     string
}

func (l *locker) firstHold() bool {
	dev, ino := l.dir.Inode()
	k := sweptKey{dev, ino, l.base}
	sweptMu.Lock()
	defer sweptMu.Unlock()
	if swept[k] {
		return false
	}
	swept[k] = true
	return true
}

// sweepOne judges r (liveness.Reclaim, with judgeStateResidue as the
// judge) and, when remove is set and r is provably inert, removes exactly
// the version judged (under the lock we hold: no reclaim flock). It
// returns why r is kept, or "" when it was removed (or, without remove,
// may be).
func (l *locker) sweepOne(r Residue, remove bool) (keep string) {
	if keep := l.prejudgeResidue(r); keep != "" {
		return keep
	}
	judged := false
	// Residue of the state file is a copy of it, of any size up to the
	// bound prejudgeResidue held its lstat to: the capture is capped there
	// too, so a file grown after that look is read no further (kept).
	rm := liveness.Removal{Quarantine: exactfs.LockQuarantineName, Unguarded: true, AnySize: true,
		MaxSize: l.residueBound()}
	_, err := liveness.Reclaim(l.dir, r.Name, rm, func(c liveness.Captured) liveness.Judgement {
		judged, keep = true, l.judgeStateResidue(r, c)
		if keep != "" || !remove {
			return liveness.Judgement{Verdict: liveness.Unknown, Reason: "kept"}
		}
		return liveness.Judgement{Verdict: liveness.Dead, Reason: "inert residue"}
	})
	switch {
	case keep != "":
		return keep
	case judged && (!remove || err == nil || errors.Is(err, exactfs.ErrCleanupPending)):
		return ""
	case judged:
		return "exact unlink refused: " + err.Error()
	case errors.Is(err, exactfs.ErrReparsePoint):
		return "a symlink: never followed or removed"
	case errors.Is(err, exactfs.ErrNotRegularFile):
		return "not a regular file"
	}
	return "cannot be opened or read exactly: " + err.Error()
}

// sweepResidue removes F's crash residue that is provably inert, under the
// lock we hold, and returns what it found: removed, or kept with the
// reason. It never fails the acquisition: a directory it cannot read is
// reported as one kept entry.
func (l *locker) sweepResidue() []Residue {
	all, err := l.residue()
	if err != nil {
		return []Residue{{Name: l.dir.Name(), Kind: "directory", Note: "kept: the directory could not be read for residue: " + err.Error()}}
	}
	var out []Residue
	if r := l.finishLegacyRemoval(); r != nil {
		out = append(out, *r)
	}
	for _, r := range all {
		if !l.stateResidue(r) {
			continue
		}
		if keep := l.sweepOne(r, true); keep != "" {
			r.Note = "kept: " + keep
		} else {
			r.Removed, r.Note = true, "removed: unopened and not the state file"
			if r.Kind == "temp" {
				r.Note += ", its writer dead"
			}
		}
		out = append(out, r)
	}
	return out
}
