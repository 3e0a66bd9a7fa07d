package statelock

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/exactfs/exactfs"
)

// ErrLocked reports that the lock is held by someone else: a TryLock that
// met a holder, or a Lock whose wait budget ran out. Check it with
// errors.Is; the *LockError says who holds the lock. It matches a
// *LockError whose reason is one of the contention reasons below.
var ErrLocked = exactfs.Class("state file lock is held", contentionReasons...)

// Reason classifies a lock failure: it is the failure's exactfs code. The
// values are the reference's, so that operators see one vocabulary in Go
// and TypeScript logs.
type Reason = exactfs.Code

// Reasons, as the reference names them.
const (
	// The wait budget ran out while a holder kept the lock.
	ReasonAcquireTimeout Reason = "acquire_timeout"
	// The wait budget ran out while the transition claim stayed taken.
	ReasonTransitionClaimTimeout Reason = "transition_claim_timeout"
	// The owner record names a live process, or one whose death cannot be proved.
	ReasonOwnerLive Reason = "lock_owner_live_or_unverifiable"
	// The owner record is malformed but young: its writer may still be writing it.
	ReasonOwnerRecordFresh Reason = "lock_owner_record_fresh"
	// The owner record cannot be attributed to a process on this host.
	ReasonOwnerUnprovenanced Reason = "lock_owner_record_unprovenanced"
	// A legacy F.lock/ directory whose owner cannot be proved dead.
	ReasonLegacyUnprovenanced Reason = "legacy_directory_owner_unprovenanced"
	// The lock path is a symlink, FIFO, socket or device: not a lock anyone wrote.
	ReasonUnsafePathType Reason = "unsafe_lock_path_type"
	// The lock could not be set up (host identity, directory, record creation).
	ReasonInitFailed Reason = "lock_initialization_failed"
	// What occupies the lock path could not be read or judged.
	ReasonInspectionFailed Reason = "lock_inspection_failed"
	// The held record could not be proved ours and released.
	ReasonReleaseFailed Reason = "lock_release_failed"
)

// contentionReasons are the reasons that mean "someone holds it": they
// satisfy errors.Is(err, ErrLocked).
var contentionReasons = []Reason{ReasonAcquireTimeout, ReasonTransitionClaimTimeout, ReasonOwnerLive,
	ReasonOwnerRecordFresh, ReasonOwnerUnprovenanced, ReasonLegacyUnprovenanced}

// LockError describes a failure to acquire, judge or release a state-file
// lock. It is the one exactfs error type: Path is the F.lock path, Code the
// reason in the protocol's vocabulary, Detail the sentence a person reads,
// and Err the cause: a *WaitError, which says who holds the lock and what
// the acquisition (or release) tried before it gave up, wrapping the
// failure's own cause, if any (an *exactfs.Error, an *fs.PathError, a
// context error).
//
// As for every exactfs error, the reason is the outcome: errors.Is matches
// the reason's sentinel (exactfs.Sentinel(reason), and ErrLocked for the
// contention reasons) and never a code of the cause (a missing directory
// under lock_initialization_failed is not fs.ErrNotExist); errors.As
// reaches the *WaitError and the cause below it, and errors.Is the cause's
// other errors (context.Canceled, an errno).
type LockError = exactfs.Error

// WaitError is the cause every *LockError of this package carries: who
// holds the lock and how long the call tried to get it (or, for
// lock_release_failed, to get the transition claim it releases under). It
// is reached with errors.As; the outcome stays the LockError's Code:
//
//	var w *statelock.WaitError
//	if errors.As(err, &w) && w.Holder != "" {
//		log.Printf("held by %s; gave up after %d attempts over %s", w.Holder, w.Attempts, w.Elapsed)
//	}
//
// Its fields live here, not on exactfs.Error, because only the lock
// protocol waits for a holder (issue 19). The LockError's sentence already
// says them, so its message is the wrapped error's, or empty when there is
// none, and the LockError's message is unchanged by it.
type WaitError struct {
	// Holder describes who holds the lock, with the age of its record
	// ("pid 4242 on this host (alive) since 12s"), for the contention
	// reasons; "" when unknown or when no one was in the way.
	Holder string
	// Attempts is how many times the call tried, and Elapsed how long it
	// tried, before it gave up; 0 when it failed before its first attempt
	// (a lock that could not be set up, an inspection that failed).
	Attempts int
	Elapsed  time.Duration
	// Err is the failure's own cause, or nil.
	Err error
}

func (e *WaitError) Error() string {
	if e.Err == nil {
		return ""
	}
	return e.Err.Error()
}

func (e *WaitError) Unwrap() error { return e.Err }

// lockError makes the error of a lock failure, its message included:
// statelock's errors are whole sentences ("state.json.lock is locked: held
// by pid 4242 on this host (alive) since 12s"), so they carry no Op.
func lockError(lockPath string, reason Reason, attempts int, elapsed time.Duration, holder string, err error) *LockError {
	w := &WaitError{Holder: holder, Attempts: attempts, Elapsed: elapsed, Err: err}
	return &LockError{Path: lockPath, Code: reason, Detail: sentence(lockPath, reason, w), Err: w}
}

// sentence says what failed, for a person; the code and the cause follow it.
func sentence(lockPath string, reason Reason, w *WaitError) string {
	name := filepath.Base(lockPath)
	var b strings.Builder
	switch reason {
	case ReasonAcquireTimeout, ReasonTransitionClaimTimeout:
		what := name
		if reason == ReasonTransitionClaimTimeout {
			what = name + ".transition (the transition claim)"
		}
		verb := "timed out after %s waiting for %s (%d attempts)"
		if errors.Is(w.Err, context.Canceled) || errors.Is(w.Err, context.DeadlineExceeded) {
			verb = "stopped waiting after %s for %s (%d attempts)"
		}
		fmt.Fprintf(&b, verb, roundDur(w.Elapsed), what, w.Attempts)
	case ReasonOwnerLive, ReasonOwnerRecordFresh, ReasonOwnerUnprovenanced, ReasonLegacyUnprovenanced:
		fmt.Fprintf(&b, "%s is locked", name)
	case ReasonUnsafePathType:
		fmt.Fprintf(&b, "refusing to use %s: it is not a regular file or directory", name)
	case ReasonUntrusted:
		fmt.Fprintf(&b, "refusing to take %s: a lock file there is not one it can trust", name)
	case ReasonInitFailed:
		fmt.Fprintf(&b, "cannot take %s", name)
	case ReasonInspectionFailed:
		fmt.Fprintf(&b, "cannot inspect %s", name)
	case ReasonReleaseFailed:
		fmt.Fprintf(&b, "cannot release %s", name)
	default:
		fmt.Fprintf(&b, "%s: lock failure", name)
	}
	if w.Holder != "" {
		fmt.Fprintf(&b, ": held by %s", w.Holder)
	}
	return b.String()
}

// roundDur prints a duration the way a person reads a wait: "5s", "1.2s", "40ms".
func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}
