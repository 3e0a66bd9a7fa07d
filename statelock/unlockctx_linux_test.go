//go:build linux && !exactfs_portable

package statelock

import (
	"context"
	"errors"
	"os"
	"testing"
)

// UnlockContext stops waiting for a busy transition claim when its context
// is done (Unlock waits out the wait budget, at least DefaultWait): with a
// context already cancelled it makes one attempt, fails as a release
// failure that wraps the context's error, and leaves the record, whose
// kernel lock it dropped, to be reclaimed at once by the next exactfs
// taker once the claim is free.
func TestUnlockContextGivesUpOnBusyClaim(t *testing.T) {
	requireCohort(t)
	e := newEnv(t)
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	tok := h.Token()
	// A claim a reference process just made (its directory, no sidecar
	// yet): young, so no rule may break it; the release waits for it.
	if err := os.Mkdir(e.claim, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = h.UnlockContext(ctx)
	var le *LockError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &le) || le.Code != ReasonReleaseFailed {
		t.Fatalf("UnlockContext with a done context behind a busy claim: %v; want a release failure wrapping context.Canceled", err)
	}
	if r := recordAt(t, e); r.Released || r.Token != tok {
		t.Fatalf("F.lock after the given-up release: %s; want our live record left", mustRead(t, e.lock))
	}
	if err := os.Remove(e.claim); err != nil {
		t.Fatal(err)
	}
	h2, err := TryLock(e.state, e.opts()...)
	if err != nil {
		t.Fatalf("TryLock after the given-up release, the claim gone: %v; want the record reclaimed (its kernel lock is dropped)", err)
	}
	if err := h2.Unlock(); err != nil {
		t.Fatal(err)
	}
}
