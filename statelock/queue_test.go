package statelock

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
)

// Waiters are served in arrival order: B, which started waiting after A,
// does not take the lock before A, although both are woken by the release.
func TestQueueOrder(t *testing.T) {
	if !ofdSupported {
		t.Skip("no waiter queue without OFD locks")
	}
	e := newEnv(t)
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 2)
	waiter := func(name string) {
		w, err := Lock(context.Background(), e.state, e.opts(WithWait(30*time.Second))...)
		if err != nil {
			t.Error(err)
			order <- name + " failed"
			return
		}
		order <- name
		time.Sleep(50 * time.Millisecond)
		w.Unlock()
	}
	queuedCount := func() bool {
		f, err := os.Open(e.lock)
		if err != nil {
			return false
		}
		defer f.Close()
		return queueAheadFd(f.Fd(), -1)
	}
	go waiter("A")
	for i := 0; !queuedCount(); i++ {
		if i > 1000 {
			t.Fatal("A never queued")
		}
		time.Sleep(5 * time.Millisecond)
	}
	go waiter("B")
	time.Sleep(300 * time.Millisecond)
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	first, second := <-order, <-order
	if first != "A" || second != "B" {
		t.Fatalf("served %s then %s, want A then B", first, second)
	}
}

// A new caller that finds a holder the kernel vouches for waits without
// taking the transition claim: taking it would write the sidecar twice for
// nothing and crowd the claim the holder needs for its release.
func TestNewcomerDoesNotTakeClaimWhileHeld(t *testing.T) {
	if !ofdSupported {
		t.Skip("no kernel lock to look at")
	}
	e := newEnv(t)
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	var taken atomic.Int32
	defer hook.Set(HookClaimTaken, func(string) { taken.Add(1) })()
	done := make(chan error, 1)
	go func() {
		w, err := Lock(context.Background(), e.state, e.opts(WithWait(10*time.Second))...)
		if err == nil {
			err = w.Unlock()
		}
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	if n := taken.Load(); n != 0 {
		t.Fatalf("the waiting caller took the claim %d times while the lock was held", n)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
