package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/statelock"
)

// The exit status follows the outcome code: a lock failure's reason, or,
// for a failed lock step (initialization, inspection, release), the code
// of what made it fail; never a code buried under another outcome.
func TestExitCodeFollowsTheOutcomeCode(t *testing.T) {
	const lockPath = "/x/s.lock"
	lock := func(r statelock.Reason, cause error) error {
		return &statelock.LockError{Path: lockPath, Code: r, Err: cause}
	}
	coded := func(c exactfs.Code, cause error) error {
		return &exactfs.Error{Op: "open", Path: lockPath, Code: c, Err: cause}
	}
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"contention", lock(statelock.ReasonOwnerLive, nil), exitBusy},
		{"timeout", fmt.Errorf("lock: %w", lock(statelock.ReasonAcquireTimeout, context.DeadlineExceeded)), exitBusy},
		{"unsafe lock path", lock(statelock.ReasonUnsafePathType, coded(exactfs.CodeReparsePoint, nil)), exitUnsafe},
		{"init through a symlink", lock(statelock.ReasonInitFailed, coded(exactfs.CodeReparsePoint, nil)), exitUnsafe},
		{"another user's lock file", lock(statelock.ReasonUntrusted, coded(exactfs.CodePermissionDenied, nil)), exitUnsafe},
		{"inspection of a changing record", lock(statelock.ReasonInspectionFailed, coded(exactfs.CodeChangedDuringRead, nil)), exitBusy},
		{"release of a replaced record", lock(statelock.ReasonReleaseFailed, coded(exactfs.CodeIdentityMismatch, nil)), exitMismatch},
		{"init, uncoded cause", lock(statelock.ReasonInitFailed, errors.New("no host id")), exitIO},
		// A code below another outcome does not classify: the outer code is the outcome.
		{"symlink under io_error", coded(exactfs.CodeIOError, coded(exactfs.CodeReparsePoint, nil)), exitIO},
		{"contention under io_error", coded(exactfs.CodeIOError, lock(statelock.ReasonOwnerLive, nil)), exitIO},
		{"mismatch", coded(exactfs.CodeIdentityMismatch, coded(exactfs.CodeNotFound, nil)), exitMismatch},
	} {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("%s: exitCode(%v) = %d, want %d", tc.name, tc.err, got, tc.want)
		}
	}
	if lockFailed(coded(exactfs.CodeNotFound, nil)) != nil {
		t.Error("an exactfs error that is no lock failure counts as one")
	}
	if h := hintFor(lock(statelock.ReasonOwnerLive, nil), exitBusy); h == "" || h == hintFor(coded(exactfs.CodeChangedDuringRead, nil), exitBusy) {
		t.Errorf("contention gets the hint of a changed file: %q", h)
	}
}

// The busy hint reads who holds the lock from the failure's
// *statelock.WaitError cause (issue 19 moved Holder off exactfs.Error): a
// crash-left transition claim points at 'exactfs recover', an empty legacy
// directory at rmdir, a live holder at waiting; wrapped, the same.
func TestBusyHintReadsTheHolderFromTheWaitCause(t *testing.T) {
	const lockPath = "/x/s.lock"
	busy := func(holder string) error {
		return fmt.Errorf("lock: %w", &statelock.LockError{Path: lockPath, Code: statelock.ReasonTransitionClaimTimeout,
			Err: &statelock.WaitError{Holder: holder, Attempts: 3, Elapsed: time.Second}})
	}
	for _, tc := range []struct{ holder, want string }{
		{"a transition claim: no readable sidecar; only explicit recovery can remove this claim", "run 'exactfs recover /x/s'"},
		{"an empty legacy lock directory", "rmdir /x/s.lock"},
		{"pid 42 on this host (alive) since 3s", "retry later"},
	} {
		if h := hintFor(busy(tc.holder), exitBusy); !strings.Contains(h, tc.want) {
			t.Errorf("holder %q: hint %q does not say %q", tc.holder, h, tc.want)
		}
	}
	// A failure without the cause gets the plain busy hint.
	plain := &statelock.LockError{Path: lockPath, Code: statelock.ReasonOwnerLive}
	if h := hintFor(plain, exitBusy); !strings.Contains(h, "retry later") {
		t.Errorf("no cause: hint %q", h)
	}
}
