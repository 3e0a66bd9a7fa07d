package statelock

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestContextDeadlineIsTheBudget: without WithWait, a context deadline
// longer than DefaultWait is waited out in full; with WithWait, the shorter
// of the two ends the wait; WaitForever waits for the holder.
func TestContextDeadlineIsTheBudget(t *testing.T) {
	e := newEnv(t)
	held, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	hold := DefaultWait + 1500*time.Millisecond
	released := make(chan error, 1)
	time.AfterFunc(hold, func() { released <- held.Unlock() })

	ctx, cancel := context.WithTimeout(context.Background(), DefaultWait+20*time.Second)
	defer cancel()
	start := time.Now()
	h, err := Lock(ctx, e.state, e.opts()...)
	if err != nil {
		t.Fatalf("Lock with a deadline %v away gave up after %v: %v", DefaultWait+20*time.Second, time.Since(start), err)
	}
	if el := time.Since(start); el < DefaultWait {
		t.Fatalf("Lock returned after %v, before the holder released at %v", el, hold)
	}
	if err := <-released; err != nil {
		t.Fatal(err)
	}

	// An explicit WithWait shorter than the deadline still ends the wait.
	start = time.Now()
	_, err = Lock(ctx, e.state, e.opts(WithWait(300*time.Millisecond))...)
	if !errors.Is(err, ErrLocked) || time.Since(start) > DefaultWait {
		t.Fatalf("Lock with WithWait(300ms) under a long deadline: %v after %v", err, time.Since(start))
	}
	// WaitForever waits for the release, however late.
	time.AfterFunc(DefaultWait+500*time.Millisecond, func() { released <- h.Unlock() })
	start = time.Now()
	h2, err := Lock(context.Background(), e.state, e.opts(WithWait(WaitForever))...)
	if err != nil || time.Since(start) < DefaultWait {
		t.Fatalf("Lock with WaitForever: %v after %v", err, time.Since(start))
	}
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	if err := h2.Unlock(); err != nil {
		t.Fatal(err)
	}
}
