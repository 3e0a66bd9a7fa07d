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
// errors.Is; the *LockError around it says who holds the lock.
var ErrLocked = errors.New("state file lock is held")

// Reason classifies a lock failure. The values are the reference's, so that
// operators see one vocabulary in Go and TypeScript logs.
type Reason string

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

// contention reports reasons that mean "someone holds it": they satisfy
// errors.Is(err, ErrLocked).
func (r Reason) contention() bool {
	switch r {
	case ReasonAcquireTimeout, ReasonTransitionClaimTimeout, ReasonOwnerLive,
		ReasonOwnerRecordFresh, ReasonOwnerUnprovenanced, ReasonLegacyUnprovenanced:
		return true
	}
	return false
}

// LockError describes a failure to acquire, judge or release a state-file
// lock. Err is the underlying cause (an *exactfs.Error, an *fs.PathError, a
// context error); errors.Is and errors.As see through it.
type LockError struct {
	LockPath string        // the F.lock path
	Reason   Reason        // what went wrong, in the protocol's vocabulary
	Attempts int           // acquisition attempts made
	Elapsed  time.Duration // time spent before giving up
	Holder   string        // who holds the lock, for contention reasons; "" if unknown
	Err      error         // the cause, if any
}

func (e *LockError) Error() string {
	name := filepath.Base(e.LockPath)
	var b strings.Builder
	switch e.Reason {
	case ReasonAcquireTimeout, ReasonTransitionClaimTimeout:
		what := name
		if e.Reason == ReasonTransitionClaimTimeout {
			what = name + ".transition (the transition claim)"
		}
		verb := "timed out after %s waiting for %s (%d attempts)"
		if errors.Is(e.Err, context.Canceled) || errors.Is(e.Err, context.DeadlineExceeded) {
			verb = "stopped waiting after %s for %s (%d attempts)"
		}
		fmt.Fprintf(&b, verb, roundDur(e.Elapsed), what, e.Attempts)
	case ReasonOwnerLive, ReasonOwnerRecordFresh, ReasonOwnerUnprovenanced, ReasonLegacyUnprovenanced:
		fmt.Fprintf(&b, "%s is locked", name)
	case ReasonUnsafePathType:
		fmt.Fprintf(&b, "refusing to use %s: it is not a regular file or directory", name)
	case ReasonInitFailed:
		fmt.Fprintf(&b, "cannot take %s", name)
	case ReasonInspectionFailed:
		fmt.Fprintf(&b, "cannot inspect %s", name)
	case ReasonReleaseFailed:
		fmt.Fprintf(&b, "cannot release %s", name)
	default:
		fmt.Fprintf(&b, "%s: lock failure", name)
	}
	if e.Holder != "" {
		fmt.Fprintf(&b, ": held by %s", e.Holder)
	}
	fmt.Fprintf(&b, " (%s)", e.Reason)
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap returns the reason, as the *exactfs.Error whose Code is it (so
// exactfs.CodeOf reports a lock failure by its reason, in the one error
// vocabulary), and the cause. Both stay visible to errors.Is and
// errors.As: the CLI classifies a failure by the cause's code too (a
// symlink at the lock path, a missing directory).
func (e *LockError) Unwrap() []error {
	reason := &exactfs.Error{Op: "lock", Path: e.LockPath, Code: exactfs.Code(e.Reason)}
	if e.Err == nil {
		return []error{reason}
	}
	return []error{reason, e.Err}
}

// Is makes a contention failure match ErrLocked.
func (e *LockError) Is(target error) bool {
	return target == ErrLocked && e.Reason.contention()
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
