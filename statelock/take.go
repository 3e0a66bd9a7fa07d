package statelock

import (
	"errors"
	"io/fs"
	"syscall"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/liveness"
)

// contention says why a name could not be taken right now and by whom.
type contention struct {
	reason Reason
	holder string
	// since is when the holder's record was last written (zero: unknown);
	// a timeout error reports the age as of the failure, not of the look.
	since time.Time
	// slot: the kernel showed a slot lock (SPEC §4.8.1) on F.lock's inode
	// as this contention was found (look), which is all slotLocked would
	// ask again before a waiter seats itself; at is that inode (device,
	// inode number), whose parked descriptor the waiter then takes.
	slot bool
	at   [2]uint64
	// seen is the live record a full attempt found at F.lock, and when it
	// was read, for the next peek (peekUnchanged); nil otherwise.
	seen *seenRecord
}

// who is the holder description with its age as of now.
func (c *contention) who() string {
	if c.since.IsZero() {
		return c.holder
	}
	return c.holder + " since " + roundDur(time.Since(c.since)).String()
}

// errUnsafe wraps the refusal of a path that holds neither a regular file
// nor a directory; it carries the exactfs error (reparse_point,
// not_regular_file) so that errors.Is sees it.
type unsafeError struct{ err error }

func (e *unsafeError) Error() string { return e.err.Error() }
func (e *unsafeError) Unwrap() error { return e.err }

func unsafePath(l *locker, name string, mode fs.FileMode) error {
	code := exactfs.CodeNotRegularFile
	what := "not a regular file or directory"
	if mode&fs.ModeSymlink != 0 {
		code = exactfs.CodeReparsePoint
		what = "a symlink"
	} else if mode&fs.ModeNamedPipe != 0 {
		what = "a FIFO"
	} else if mode&fs.ModeSocket != 0 {
		what = "a socket"
	} else if mode&fs.ModeDevice != 0 {
		what = "a device"
	}
	return &unsafeError{&exactfs.Error{Op: "lock", Path: l.path(name), Code: code,
		Detail: "it is " + what + ", not a lock anyone wrote; refusing to read, follow or remove it"}}
}

// takeRecord makes name our owner record: create it; or, when a
// released tombstone is there, reuse its inode; or, when its owner is
// provably dead, remove exactly the judged record and create again. It runs
// under the transition claim (or, for the sidecar, with the claim directory
// just made), so no current peer changes the pathname meanwhile; a base
// writer that takes no claim can, and the exact-identity steps keep it safe.
//
// It returns the held record, or the contention that kept it from us.
func (l *locker) takeRecord(name string, rec *Record, sidecar bool) (*heldRecord, *contention, error) {
	if !sidecar {
		// The steady state: F.lock is a released tombstone. Take it with one
		// descriptor (reuseReleased); anything else goes the full way below.
		h, ok, err := l.reuseReleased(name, rec, 0)
		switch {
		case ok && err == nil:
			return h, nil, nil
		case ok && !errors.Is(err, errRecordChanged) && !errors.Is(err, fs.ErrNotExist):
			return nil, nil, err
		}
	}
	for try := 0; try < 4; try++ {
		h, err := l.createRecord(name, rec)
		switch {
		case err == nil:
			if !sidecar {
				// F.lock did not exist: a new state directory, or one made
				// again. Its residue was never swept by a holder, whatever
				// this process remembers of a directory that had its inode.
				l.sweepDue = true
			}
			return h, nil, nil
		case errors.Is(err, errRecordChanged):
			continue // published, then replaced by someone else: look again
		case transientBusy(err):
			return nil, &contention{reason: ReasonOwnerLive, holder: busyHolder}, nil
		case !errors.Is(err, fs.ErrExist):
			return nil, nil, &initError{err}
		}
		h, c, again, err := l.occupied(name, rec, sidecar)
		if !again {
			return h, c, err
		}
	}
	return nil, &contention{reason: ReasonOwnerLive, holder: "a record that kept changing"}, nil
}

// occupied deals with what is at name when creating our record there
// failed: a legacy directory (F.lock only), something unsafe, or a record.
// again: the name changed or was freed, create again.
func (l *locker) occupied(name string, rec *Record, sidecar bool) (h *heldRecord, c *contention, again bool, err error) {
	fi, err := l.dir.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, true, nil
	case err != nil:
		return nil, nil, false, err
	case fi.IsDir() && !sidecar:
		freed, c, err := l.reclaimLegacy()
		if !freed && c == nil && err == nil {
			c = &contention{reason: ReasonLegacyUnprovenanced, holder: "a legacy lock directory"}
		}
		return nil, c, freed, err
	case !fi.Mode().IsRegular():
		return nil, nil, false, unsafePath(l, name, fi.Mode())
	}
	if !sidecar {
		hook.Fire(hook.LockAfterTypeDecision, l.path(name))
	}
	return l.reclaimRecord(name, rec, sidecar)
}

// reclaimRecord judges the record at name (liveness.Reclaim: one capture,
// the verdict on exactly those bytes, and on Dead an exact unlink of that
// version after it is captured again). A released tombstone is reused
// instead; a record whose owner is not provably gone is contention.
// again: the name was freed (or changed under us), create again.
func (l *locker) reclaimRecord(name string, rec *Record, sidecar bool) (h *heldRecord, c *contention, again bool, err error) {
	var (
		s        *snapshot
		v        verdict
		distrust string
		st       exactfs.RawStat
		entomb   bool
	)
	j, err := liveness.Reclaim(l.dir, name, l.removal(name, !sidecar), func(got liveness.Captured) liveness.Judgement {
		s = newSnapshot(got.Data, got.ID)
		distrust, st = l.distrustFile(got.File)
		var j liveness.Judgement
		v, j, entomb = l.judgeOccupant(s, got.File, distrust, sidecar)
		return j
	})
	switch {
	case s == nil:
		c, again, err = unreadRecord(err)
		return nil, c, again, l.refuseIfForeign(name, err)
	case s.released() && distrust == "":
		return l.takeTombstone(name, s, rec)
	case entomb:
		// Entombed (or changed since the verdict): look again, and take
		// the tombstone the next look finds.
		if _, err := l.entombSidecar(s); err != nil {
			return nil, nil, false, err
		}
		return nil, nil, true, nil
	case j.Verdict != liveness.Dead:
		c := &contention{reason: v.reason, holder: l.describeWho(s, v), since: unixTime(s.id.MtimeNs)}
		if !sidecar && s.rec != nil {
			c.seen = &seenRecord{s: s, at: time.Now()}
		}
		return nil, c, false, nil
	}
	// Judged dead: err is the removal's. A successor that took the name
	// in between keeps it; this call just loses the race and looks again.
	if err := exactRemoved(err); err != nil {
		if transientBusy(err) {
			// Judged dead, but a handle without FILE_SHARE_DELETE (a
			// scanner's, a reader's) keeps the record from being removed
			// now: wait it out.
			return nil, &contention{reason: ReasonOwnerLive, since: unixTime(s.id.MtimeNs),
				holder: l.describeWho(s, v) + "; its record cannot be removed until another process lets go of it (a Windows sharing violation)"}, false, nil
		}
		if distrust != "" && (permissionError(err) || errors.Is(err, exactfs.ErrHardLinkUnsupported)) {
			// The directory keeps us from replacing it (sticky, or not
			// ours to write): refuse, naming who can clear it.
			return nil, nil, false, l.refuseUntrusted(name, st, distrust, err)
		}
		return nil, nil, false, err
	}
	if !sidecar {
		l.sweepDue = true
	}
	return nil, nil, true, nil
}

// removal is how the state lock removes a record judged dead: exact unlink
// to a quarantine name, under the transition claim (so without the
// engine's reclaim flock), with F.lock's race hooks at the two windows.
func (l *locker) removal(name string, hooks bool) liveness.Removal {
	rm := liveness.Removal{Quarantine: exactfs.LockQuarantineName, Unguarded: true}
	if hooks {
		rm.Judged = func() { hook.Fire(hook.LockAfterStaleInspection, l.path(name)) }
		rm.Removing = func() { hook.Fire(hook.LockBeforeStaleRemoval, l.path(name)) }
	}
	return rm
}

// unreadRecord maps a failure to open or capture the record at name: gone
// (create again), not a regular file (refused), being rewritten
// (contention), or an error the filesystem raised.
func unreadRecord(err error) (c *contention, again bool, _ error) {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, true, nil
	case unsafeType(err):
		return nil, false, &unsafeError{err}
	case errors.Is(err, exactfs.ErrChangedDuringRead):
		return &contention{reason: ReasonOwnerRecordFresh, holder: "a record being written"}, false, nil
	case leased(err):
		return &contention{reason: ReasonOwnerLive, holder: leaseHolder}, false, nil
	case transientBusy(err):
		return &contention{reason: ReasonOwnerLive, holder: busyHolder}, false, nil
	case errors.Is(err, exactfs.ErrRecordTooLarge):
		// Malformed at once, unread (exactfs.RecordCap): kept, as every
		// malformed record nobody can attribute is, for a person to check.
		return &contention{reason: ReasonOwnerUnprovenanced, holder: "a malformed record: " + tooLargeWhat(err)}, false, nil
	}
	return nil, false, err
}

// tooLargeWhat is the detail of a record_too_large error: its size and
// what to do.
func tooLargeWhat(err error) string {
	var e *exactfs.Error
	if errors.As(err, &e) && e.Detail != "" {
		return e.Path + ": " + e.Detail
	}
	return err.Error()
}

// takeTombstone reuses the inode of the released tombstone s at name.
func (l *locker) takeTombstone(name string, s *snapshot, rec *Record) (*heldRecord, *contention, bool, error) {
	h, err := l.reuseTombstone(name, s, rec)
	switch {
	case err == nil:
		return h, nil, false, nil
	case errors.Is(err, errOFDConflict):
		return nil, &contention{reason: ReasonOwnerLive, holder: "a holder that is releasing it"}, false, nil
	case errors.Is(err, errRecordChanged), errors.Is(err, fs.ErrNotExist),
		errors.Is(err, exactfs.ErrChangedDuringRead):
		return nil, nil, true, nil
	case unsafeType(err):
		return nil, nil, false, &unsafeError{err}
	case leased(err), transientBusy(err):
		return nil, &contention{reason: ReasonOwnerLive, holder: busyOrLeased(err)}, false, nil
	}
	return nil, nil, false, err
}

// busyOrLeased describes the holder of a lease or of a busy Windows name.
func busyOrLeased(err error) string {
	if transientBusy(err) {
		return busyHolder
	}
	return leaseHolder
}

// leaseHolder describes the holder of a file lease on a lock file.
const leaseHolder = "a process holding a file lease on it (fcntl F_SETLEASE), until it lets go"

// leased reports whether err is a non-blocking open refused because
// another process holds a file lease that the open would break
// (EWOULDBLOCK): somebody is using the file right now, which is
// contention, never a failure.
func leased(err error) bool {
	return errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EAGAIN)
}

// exactRemoved maps the outcome of an exact removal: done, already gone, a
// successor in the way (it keeps the name; it may be rewriting it in place
// at this moment: changed_during_read), a quarantine name taken (nothing
// was moved), or the name freed with our own residue pending are all
// progress; anything else is an error the filesystem raised.
func exactRemoved(err error) error {
	switch {
	case err == nil,
		errors.Is(err, exactfs.ErrNotFound),
		errors.Is(err, exactfs.ErrIdentityMismatch),
		errors.Is(err, exactfs.ErrChangedDuringRead),
		errors.Is(err, exactfs.ErrQuarantineCollision),
		errors.Is(err, exactfs.ErrCleanupPending):
		return nil
	}
	return err
}

// unixTime converts an mtime for messages and age checks.
func unixTime(ns int64) time.Time { return time.Unix(0, ns) }
