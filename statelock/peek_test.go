//go:build unix

package statelock

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/internal/tsseed"
)

// TestWaiterLooksWhileRecordUnchanged: a Go waiter behind a holder the
// kernel cannot vouch for (a TypeScript holder takes no kernel lock; with
// the portable build no holder does) takes the transition claim about once
// per peekFresh while F.lock stays the record it read, not at every step
// of its backoff (peek.go). On the old code a 1.5 s wait took the claim
// about 18 times, each with two fsyncs (on a Mac, two full drive flushes).
// The holder's death is still seen at once: after a SIGKILL the waiter
// takes the lock well within its budget.
func TestWaiterLooksWhileRecordUnchanged(t *testing.T) {
	e := newEnv(t)
	logf := filepath.Join(e.dir, "ts.log")
	cmd := tsseed.Command(t, e.configRoot, e.state, 1, 60000, logf)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if !waitForEnter(t, logf, 60*time.Second) {
		t.Fatal("the TypeScript worker never entered its critical section")
	}
	// The record is at least peekRacy old before the first full attempt,
	// as a holder's record is whenever a waiter has waited a moment.
	time.Sleep(2 * peekRacy)
	var claims atomic.Int64
	defer hook.Set(hook.LockClaimTaken, func(string) { claims.Add(1) })()
	const wait = 1500 * time.Millisecond
	_, err := Lock(context.Background(), e.state, e.opts(WithWait(wait))...)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("Lock behind a live TypeScript holder: %v, want a timeout", err)
	}
	// A full attempt at the start, then at most one per peekFresh, and
	// the last look at the end of the budget; the old code made one per
	// backoff step (5 ms doubling to 100 ms: about 18 in 1.5 s).
	if n := claims.Load(); n > 5 {
		t.Fatalf("a %s wait took the transition claim %d times; want at most 5 (one per %s while the record is unchanged)", wait, n, peekFresh)
	} else {
		t.Logf("a %s wait took the claim %d times", wait, n)
	}

	// The holder's death is seen by the next look (the pid rules are
	// asked again each time), not only by the next full attempt.
	done := make(chan error, 1)
	go func() {
		h, err := Lock(context.Background(), e.state, e.opts(WithWait(20*time.Second))...)
		if err == nil {
			err = h.Unlock()
		}
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if err := <-done; err != nil {
		t.Fatalf("waiting out a killed TypeScript holder: %v", err)
	}
}
