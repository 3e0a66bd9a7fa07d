//go:build linux && !exactfs_portable

package statelock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/statelock/internal/wake"
)

// TestTryLockNamesItsOwnKeptRelease: a release that finds a claim
// directory (a reference contender's attempt) makes one attempt at the
// claim and, finding it busy, keeps the record and lets it go in the
// background (keepBusy). A TryLock of the same process in the moment after
// the claim is freed and before that background release meets the record,
// live and attested by this process's slot. It fails, rightly, but used to
// name "pid <our own pid> on this host (alive …)", telling the caller that
// some process held the lock it had just released; it now says the holder
// is this process's own release, waiting for the claim. The watcher's
// retry is paced (ClaimRetryMin, here 3 s) so that the moment is wide.
func TestTryLockNamesItsOwnKeptRelease(t *testing.T) {
	e := newEnv(t)
	longSticky(t, e)
	e.extra = append(e.extra, withPolicy(func(p *wake.Policy) { p.ClaimRetryMin = 3 * time.Second }))
	stickyCycle(t, e)
	stickyCycle(t, e) // this process re-locks: releases may keep
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	// A claim a reference process has just made (its directory, no
	// sidecar yet: young, no rule may break it).
	if err := os.Mkdir(e.claim, 0o700); err != nil {
		t.Fatal(err)
	}
	var letGos atomic.Int64
	defer hook.Set(hook.LockStickyLetGo, func(string) { letGos.Add(1) })()
	if err := h.Unlock(); err != nil {
		t.Fatalf("Unlock behind a busy claim: %v; want the record kept and released in the background", err)
	}
	// The watcher tries the claim at once (busy), keeps the record again
	// and sleeps ClaimRetryMin: wait for that first try to be over before
	// the claim goes.
	l, err := newLocker(e.state, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	entry := l.stickyFor(false)
	if entry == nil {
		t.Fatal("no sticky entry after a kept release")
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		entry.mu.Lock()
		tried := letGos.Load() > 0 && entry.letting == nil && entry.r != nil && entry.retry
		entry.mu.Unlock()
		if tried {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background release never tried the busy claim")
		}
		time.Sleep(time.Millisecond)
	}
	if r := recordAt(t, e); r.Released {
		t.Fatalf("F.lock after a release behind a busy claim: %s; want our record kept", mustRead(t, e.lock))
	}
	if err := os.Remove(e.claim); err != nil {
		t.Fatal(err)
	}
	_, err = TryLock(e.state, e.opts()...)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock while the background release waits: %v; want ErrLocked", err)
	}
	self := fmt.Sprintf("pid %d on this host", os.Getpid())
	if msg := err.Error(); strings.Contains(msg, self) || !strings.Contains(msg, "this process") || !strings.Contains(msg, "transition claim") {
		t.Fatalf("TryLock's error: %q; want it to name this process's own release waiting for the claim, not %q", msg, self)
	}
	letGoKept()
	h, err = TryLock(e.state, e.opts()...)
	if err != nil {
		t.Fatalf("TryLock after the kept record was let go: %v", err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
}
