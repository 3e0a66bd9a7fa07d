//go:build linux

package statelock

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
)

// A claim held while the wall clock jumps ten minutes ahead (the
// reference's scenario 17; here the claim's and its sidecar's mtimes are
// set ten minutes back, which is what every age rule sees after such a
// jump): a contender does not judge the live claim crashed, the claim and
// its sidecar survive identical, and the holder's Lock then completes.
func TestClaimHeldAcrossClockJump(t *testing.T) {
	e := newEnv(t)
	inClaim := make(chan struct{})
	resume := make(chan struct{})
	var armed atomic.Bool
	armed.Store(true)
	// Inside the claim, with its sidecar written: F.lock's first write.
	defer hook.Set(hook.LockOwnerRecordWrite, func(p string) {
		if p == e.lock && armed.CompareAndSwap(true, false) {
			close(inClaim)
			<-resume
		}
	})()
	done := make(chan error, 1)
	go func() {
		h, err := Lock(context.Background(), e.state, e.opts()...)
		if err == nil {
			err = h.Unlock()
		}
		done <- err
	}()
	select {
	case <-inClaim:
	case err := <-done:
		t.Fatalf("Lock finished without taking a claim: %v", err)
	}
	past := time.Now().Add(-10 * time.Minute)
	for _, p := range []string{e.claim, e.sidecar} {
		if err := os.Chtimes(p, past, past); err != nil {
			t.Fatal(err)
		}
	}
	claimIno := inode(t, e.claim)
	side := stateOf(t, e.sidecar)
	_, err := TryLock(e.state, e.opts()...)
	if err == nil || !errors.Is(err, ErrLocked) {
		close(resume)
		t.Fatalf("TryLock while a live claim is held, ten minutes 'old': %v, want ErrLocked", err)
	}
	t.Logf("contender: %v", err)
	if got := inode(t, e.claim); got != claimIno {
		t.Fatalf("the live claim directory was replaced (inode %d -> %d)", claimIno, got)
	}
	side.assertSame(t, e.sidecar)
	close(resume)
	if err := <-done; err != nil {
		t.Fatalf("the holder's Lock after the jump: %v", err)
	}
	assertSteadyState(t, e, true)
}

// A step inside the claim that blocks past the caller's budget (the
// reference's scenario 4): a Go call cannot abandon a step it is inside,
// so Lock returns after the step, late; what it leaves is a whole cycle's
// state, never a stranded claim. The test records by how much it overran.
func TestBudgetOverrunInsideClaim(t *testing.T) {
	e := newEnv(t)
	e.tsRecord(t, deadPid(t), e.host.ID, time.Minute)
	const budget, block = 100 * time.Millisecond, 600 * time.Millisecond
	defer hook.Set(hook.LockAfterStaleInspection, hook.Once(func(string) { time.Sleep(block) }))()
	start := time.Now()
	h, err := Lock(context.Background(), e.state, e.opts(WithWait(budget))...)
	elapsed := time.Since(start)
	t.Logf("Lock with a %v budget and a %v step inside the claim: %v after %v", budget, block, err, elapsed)
	if err != nil && !errors.Is(err, ErrLocked) {
		t.Fatalf("Lock: %v, want success or contention", err)
	}
	if err == nil {
		if err := h.Unlock(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Lstat(e.claim); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the claim directory is left after the overrun: %v", err)
	}
	if err == nil {
		assertSteadyState(t, e, true)
	}
	// The lock is usable at once by the next caller.
	h, err = TryLock(e.state, e.opts()...)
	if err != nil {
		t.Fatalf("TryLock after the overrun: %v", err)
	}
	h.Unlock()
}
