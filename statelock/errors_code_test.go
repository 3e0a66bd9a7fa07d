package statelock

import (
	"context"
	"errors"
	"io/fs"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
)

// A lock failure is an *exactfs.Error whose code is its reason, and the
// reason is the outcome, as for every exactfs error: the reason's
// sentinel matches, a code of the cause does not (a missing directory
// under lock_initialization_failed is not "nothing is there"), and the
// cause stays reachable with errors.As and for its non-outcome errors.
// (Before the lock errors were folded into exactfs.Error, the cause's
// not_found leaked through; this test pinned that, and now pins the rule.)
func TestLockErrorReasonIsTheOutcome(t *testing.T) {
	cause := &exactfs.Error{Op: "open", Path: "/x/state.json.lock", Code: exactfs.CodeNotFound}
	err := error(lockError("/x/state.json.lock", ReasonInitFailed, 0, 0, "", cause))
	if c := exactfs.CodeOf(err); c != ReasonInitFailed {
		t.Fatalf("CodeOf = %q, want %q", c, ReasonInitFailed)
	}
	if !errors.Is(err, exactfs.Sentinel(ReasonInitFailed)) {
		t.Fatal("the reason's sentinel does not match")
	}
	if errors.Is(err, exactfs.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		t.Fatal("the cause's code answers errors.Is: the reason is not the outcome")
	}
	var inner *exactfs.Error
	if !errors.As(err, &inner) || !errors.As(inner.Err, &inner) || inner != cause {
		t.Fatal("the cause is not reachable with errors.As")
	}
	if errors.Is(err, ErrLocked) {
		t.Fatal("an initialization failure matches ErrLocked")
	}
	for _, r := range contentionReasons {
		busy := error(lockError("/x/state.json.lock", r, 1, 0, "", nil))
		if !errors.Is(busy, ErrLocked) || exactfs.CodeOf(busy) != r {
			t.Fatalf("%s: Is(ErrLocked)=%v CodeOf=%q", r, errors.Is(busy, ErrLocked), exactfs.CodeOf(busy))
		}
	}
	// A contention below another reason is not contention.
	wrapped := error(lockError("/x/state.json.lock", ReasonInspectionFailed, 0, 0, "",
		lockError("/x/state.json.lock", ReasonOwnerLive, 1, 0, "", nil)))
	if errors.Is(wrapped, ErrLocked) {
		t.Fatal("ErrLocked matched the cause of an inspection failure")
	}
	stopped := error(lockError("/x/state.json.lock", ReasonAcquireTimeout, 3, time.Second, "", context.Canceled))
	if !errors.Is(stopped, context.Canceled) || !errors.Is(stopped, ErrLocked) {
		t.Fatal("a cancelled wait is not both ErrLocked and context.Canceled")
	}
}

// The messages are what the lock's own error type printed: the sentence,
// the holder, the reason, then the cause.
func TestLockErrorMessages(t *testing.T) {
	const path = "/x/state.json.lock"
	cause := &exactfs.Error{Op: "open", Path: path, Code: exactfs.CodeNotFound}
	for _, tc := range []struct {
		err  *LockError
		want string
	}{
		{lockError(path, ReasonAcquireTimeout, 7, 1234*time.Millisecond, "pid 42 on this host (alive) since 3s", nil),
			"timed out after 1.2s waiting for state.json.lock (7 attempts): held by pid 42 on this host (alive) since 3s (acquire_timeout)"},
		{lockError(path, ReasonTransitionClaimTimeout, 2, 40*time.Millisecond, "", context.DeadlineExceeded),
			"stopped waiting after 40ms for state.json.lock.transition (the transition claim) (2 attempts) (transition_claim_timeout): context deadline exceeded"},
		{lockError(path, ReasonOwnerLive, 1, 0, "pid 7 on host b", nil),
			"state.json.lock is locked: held by pid 7 on host b (lock_owner_live_or_unverifiable)"},
		{lockError(path, ReasonUnsafePathType, 1, 0, "", nil),
			"refusing to use state.json.lock: it is not a regular file or directory (unsafe_lock_path_type)"},
		{lockError(path, ReasonInitFailed, 0, 0, "", cause),
			"cannot take state.json.lock (lock_initialization_failed): open /x/state.json.lock: nothing is there (not_found)"},
		{lockError(path, ReasonInspectionFailed, 0, 0, "", nil), "cannot inspect state.json.lock (lock_inspection_failed)"},
		{lockError(path, ReasonReleaseFailed, 0, 0, "", errors.New("already unlocked")),
			"cannot release state.json.lock (lock_release_failed): already unlocked"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
}

// Who held the lock and what the call tried are the *WaitError cause of
// every lock failure (issue 19: exactfs.Error keeps only the fields every
// package uses), reached with errors.As, with the values the sentence
// reports; the outcome and the cause's own errors answer as before.
func TestLockErrorWaitIsItsCause(t *testing.T) {
	const path = "/x/state.json.lock"
	const holder = "pid 42 on this host (alive) since 3s"
	err := error(lockError(path, ReasonAcquireTimeout, 7, 1234*time.Millisecond, holder, context.DeadlineExceeded))
	var w *WaitError
	if !errors.As(err, &w) {
		t.Fatalf("%v: no *WaitError cause", err)
	}
	if w.Holder != holder || w.Attempts != 7 || w.Elapsed != 1234*time.Millisecond || w.Err != context.DeadlineExceeded {
		t.Fatalf("cause %+v, want holder %q, 7 attempts over 1.234s, the context's error", *w, holder)
	}
	if !errors.Is(err, ErrLocked) || !errors.Is(err, context.DeadlineExceeded) || exactfs.CodeOf(err) != ReasonAcquireTimeout {
		t.Fatalf("%v: the outcome or the context's error no longer answers", err)
	}
	const want = "stopped waiting after 1.2s for state.json.lock (7 attempts): held by " + holder + " (acquire_timeout): context deadline exceeded"
	if err.Error() != want {
		t.Fatalf("got  %q\nwant %q", err, want)
	}

	// A failure without a cause of its own still carries the cause, which
	// adds nothing to the message.
	none := error(lockError(path, ReasonInspectionFailed, 0, 0, "", nil))
	if !errors.As(none, &w) || *w != (WaitError{}) || none.Error() != "cannot inspect state.json.lock (lock_inspection_failed)" {
		t.Fatalf("%q: cause %+v", none, w)
	}

	// errors.As finds the outer failure's wait first, the inner one below it.
	inner := lockError(path, ReasonOwnerLive, 1, 0, holder, nil)
	outer := error(lockError(path, ReasonInspectionFailed, 0, 0, "", inner))
	if !errors.As(outer, &w) || w.Holder != "" || w.Err != inner {
		t.Fatalf("outer cause %+v", w)
	}
	if !errors.As(w.Err, &w) || w.Holder != holder || w.Attempts != 1 {
		t.Fatalf("inner cause %+v", w)
	}
}
