package statelock

import (
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"

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
// while we hold it.

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

// stateResidue reports whether r is staging or temp residue that the
// sweep judges: F's own, and that of the lock's records (an owner record or
// sidecar staged by publishRecord whose creator died before the rename;
// the creator holds its descriptor, with the OFD lock, from the create on,
// so "open nowhere" proves it dead just the same).
func (l *locker) stateResidue(r Residue) bool {
	switch r.Kind {
	case "temp":
		return true
	case "staging":
		dest, _ := exactfs.StagingTarget(r.Name)
		return dest == l.base || dest == l.lockName || dest == l.sidecar
	}
	return false
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
	// Residue of the state file is a copy of it, of any size.
	rm := liveness.Removal{Quarantine: exactfs.LockQuarantineName, Unguarded: true, AnySize: true}
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

// residueFloor is the least size bound of residue the sweep reads
// (residueBound).
const residueFloor = 64 << 20

// residueBound is the largest staging or temp file of F the sweep will
// capture: a writer's residue is a copy of a version of F, or a record, so
// nothing we write is much larger than F is now unless F shrank. The bound
// is four times F's current size, and never less than residueFloor (an
// update that shrank F a lot, a TypeScript peer's larger version). A
// larger file is kept and reported, unread: the sweep runs under the lock,
// and reading another writer's gigabyte there would hold every process of
// F behind it.
func (l *locker) residueBound() int64 {
	bound := int64(residueFloor)
	if st, err := l.dir.LstatRaw(l.base); err == nil && st.Size > bound/4 {
		bound = 4 * st.Size
	}
	return bound
}

// prejudgeResidue keeps r on what an lstat already says, before a byte of
// it is read: another user's file (kept whatever its bytes: trust.go), a
// hard link, anything but a regular file, or a file larger than
// residueBound. Capturing first let another uid's planted 1 GiB sparse
// file named like our staging residue be read whole under the lock by
// every process's first acquisition (22 s and 2.6 GB per update). Keeping
// is always safe; a file that passes here is judged again, on the
// captured descriptor (judgeStateResidue), so a file that changes between
// the lstat and the capture gains nothing.
func (l *locker) prejudgeResidue(r Residue) string {
	st, err := l.dir.LstatRaw(r.Name)
	if err != nil {
		return "" // the capture reports it (not_found, ...)
	}
	if why := l.foreignOwner(st.Uid); why != "" {
		return why + ": another user's file is never removed (trust.go), nor read"
	}
	switch {
	case st.Mode&fs.ModeSymlink != 0:
		return "a symlink: never followed or removed"
	case !st.Mode.IsRegular():
		return "not a regular file"
	case st.Nlink != 1:
		return fmt.Sprintf("hard-linked (%d links): its other names would keep the bytes", st.Nlink)
	}
	if b := l.residueBound(); st.Size > b {
		return fmt.Sprintf("%d bytes, larger than anything a writer of this state file leaves (at most %d: four times the state file, at least %d MiB); "+
			"not read under the lock: remove it by hand once you know its writer is gone", st.Size, b, residueFloor>>20)
	}
	return ""
}

// judgeStateResidue proves what it can about r, captured as c (its bytes
// and identity, and the descriptor the kernel is asked through): "" when
// it may be removed, or why it must be kept.
func (l *locker) judgeStateResidue(r Residue, c liveness.Captured) string {
	id := c.ID
	if why := l.foreignFile(c.File); why != "" {
		return why + ": another user's file is never removed (trust.go)"
	}
	if id.Nlink != 1 {
		return fmt.Sprintf("hard-linked (%d links): its other names would keep the bytes", id.Nlink)
	}
	if fi, err := l.dir.Lstat(l.base); err == nil {
		if cur, ok := fi.Sys().(exactfs.Identity); ok && cur.SameInode(id) {
			return "it is the current state file"
		}
	}
	why, err := exactfs.ProbeUnopened(c.File)
	if err != nil {
		return "the kernel's open-file probe failed: " + err.Error()
	}
	if why != "" {
		return why
	}
	if r.Kind == "temp" {
		pid := l.tempPid(r.Name)
		if dead, why := l.pidGone(pid); !dead {
			return fmt.Sprintf("its writer, pid %d, is not provably dead (%s)", pid, why)
		}
	}
	return ""
}

// pidGone reports whether no live process has pid: kill(pid, 0) says
// ESRCH, or the process is a zombie.
func (l *locker) pidGone(pid int) (bool, string) {
	var p liveness.Prober = liveness.System{}
	if l.judge.Probe != nil {
		p = l.judge.Probe
	}
	err := p.Signal(pid)
	if errors.Is(err, syscall.ESRCH) {
		return true, ""
	}
	if z, zerr := p.Zombie(pid); zerr == nil && z {
		return true, ""
	}
	if err != nil {
		return false, err.Error()
	}
	return false, "the pid exists"
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
