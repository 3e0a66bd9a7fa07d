package statelock

import (
	"errors"
	"io/fs"
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
		if err == nil {
			if !sidecar {
				// F.lock did not exist: a new state directory, or one made
				// again. Its residue was never swept by a holder, whatever
				// this process remembers of a directory that had its inode.
				l.sweepDue = true
			}
			return h, nil, nil
		}
		if errors.Is(err, errRecordChanged) {
			continue // published, then replaced by someone else: look again
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, nil, &initError{err}
		}
		fi, err := l.dir.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		switch {
		case fi.IsDir() && !sidecar:
			freed, c, err := l.reclaimLegacy()
			if err != nil || c != nil {
				return nil, c, err
			}
			if freed {
				continue
			}
			return nil, &contention{reason: ReasonLegacyUnprovenanced, holder: "a legacy lock directory"}, nil
		case !fi.Mode().IsRegular():
			return nil, nil, unsafePath(l, name, fi.Mode())
		}
		if !sidecar {
			hook.Fire(hook.LockAfterTypeDecision, l.path(name))
		}
		f, s, err := l.openCapture(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case unsafeType(err):
			return nil, nil, &unsafeError{err}
		case errors.Is(err, exactfs.ErrChangedDuringRead):
			return nil, &contention{reason: ReasonOwnerRecordFresh, holder: "a record being written"}, nil
		case err != nil:
			return nil, nil, err
		}
		if s.released() {
			f.Close()
			h, err := l.reuseTombstone(name, s, rec)
			switch {
			case err == nil:
				return h, nil, nil
			case errors.Is(err, errOFDConflict):
				return nil, &contention{reason: ReasonOwnerLive, holder: "a holder that is releasing it"}, nil
			case errors.Is(err, errRecordChanged), errors.Is(err, fs.ErrNotExist),
				errors.Is(err, exactfs.ErrChangedDuringRead):
				continue
			case unsafeType(err):
				return nil, nil, &unsafeError{err}
			}
			return nil, nil, err
		}
		v := l.judgeRecord(s, f)
		if !v.dead() && sidecar && s.rec == nil && age(s.id) >= staleAge {
			// A malformed sidecar while we hold the claim directory: its
			// writer lost the claim long ago (the directory was removed by
			// recovery) and died before writing it.
			v.Judgement.Verdict, v.Judgement.Reason = liveness.Dead, "malformed sidecar older than 30s outside any claim"
		}
		f.Close()
		if !v.dead() {
			return nil, &contention{reason: v.reason, holder: l.describeWho(s, v), since: unixTime(s.id.MtimeNs)}, nil
		}
		if err := l.removeJudged(name, s, !sidecar); err != nil {
			return nil, nil, err
		}
		if !sidecar {
			l.sweepDue = true
		}
	}
	return nil, &contention{reason: ReasonOwnerLive, holder: "a record that kept changing"}, nil
}

// removeJudged exactly unlinks the record that was judged dead: re-capture
// (it must still be the judged bytes and inode), then compare-and-delete
// that identity. A successor that took the pathname in between keeps it;
// this call just loses the race and the caller tries again.
func (l *locker) removeJudged(name string, judged *snapshot, hooks bool) error {
	if hooks {
		hook.Fire(hook.LockAfterStaleInspection, l.path(name))
	}
	cur, err := l.capture(name)
	if err != nil || !sameRecord(cur.id, judged.id) {
		return nil
	}
	if hooks {
		hook.Fire(hook.LockBeforeStaleRemoval, l.path(name))
	}
	return exactRemoved(l.dir.UnlinkExact(name, judged.id, quarantineName()))
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
