package statelock

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/exactfs/exactfs"
)

// A lock failure carries its reason as its exactfs code, and keeps its
// cause visible: ErrLocked, the cause's own code, and fs.ErrNotExist for a
// missing directory all still match.
func TestLockErrorReasonIsItsCode(t *testing.T) {
	cause := &exactfs.Error{Op: "open", Path: "/x/state.json.lock", Code: exactfs.CodeNotFound}
	err := error(&LockError{LockPath: "/x/state.json.lock", Reason: ReasonInitFailed, Err: cause})
	if c := exactfs.CodeOf(err); c != exactfs.Code(ReasonInitFailed) {
		t.Fatalf("CodeOf = %q, want %q", c, ReasonInitFailed)
	}
	if !errors.Is(err, exactfs.Sentinel(exactfs.Code(ReasonInitFailed))) {
		t.Fatal("the reason's sentinel does not match")
	}
	if !errors.Is(err, exactfs.ErrNotFound) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("the cause is no longer visible")
	}
	if errors.Is(err, ErrLocked) {
		t.Fatal("an initialization failure matches ErrLocked")
	}
	busy := error(&LockError{LockPath: "/x/state.json.lock", Reason: ReasonOwnerLive})
	if !errors.Is(busy, ErrLocked) || exactfs.CodeOf(busy) != exactfs.Code(ReasonOwnerLive) {
		t.Fatalf("contention: Is(ErrLocked)=%v CodeOf=%q", errors.Is(busy, ErrLocked), exactfs.CodeOf(busy))
	}
}
