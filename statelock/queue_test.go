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
	// Queued: seated in the Go cohort's mailbox (handoff.go, served
	// oldest ticket first), or, with the cohort off, in the OFD queue.
	queuedCount := func() bool {
		if n := waitingSeats(e); n > 0 {
			return true
		}
		f, err := os.Open(e.lock)
		if err != nil {
			return false
		}
		defer f.Close()
		return testQueue.Ahead(int(f.Fd()), -1)
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
	defer hook.Set(hook.LockClaimTaken, func(string) { taken.Add(1) })()
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

// The two modes of the queue, as a new caller's first look sees them: a
// waiter queued for less than testQueue.Barge may be overtaken when the lock is
// free (normal mode); one queued for longer may not (starvation mode); and
// a held lock is waited for either way.
func TestLookNormalAndStarvationModes(t *testing.T) {
	if !ofdSupported {
		t.Skip("no waiter queue without OFD locks")
	}
	e := newEnv(t)
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	look := func() (c *contention, skipped bool) {
		t.Helper()
		l, err := newLocker(e.state, e.opts())
		if err != nil {
			t.Fatal(err)
		}
		defer l.close()
		return l.look()
	}
	if c, _ := look(); c == nil || c.reason != ReasonOwnerLive {
		t.Fatalf("held lock: look said %+v", c)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	if c, _ := look(); c != nil {
		t.Fatalf("free lock, nobody queued: look said %+v", c)
	}
	young := plantTicket(t, e, testQueue.Barge/10)
	if c, skipped := look(); c != nil || skipped {
		t.Fatalf("free lock, a waiter queued %v ago: look said %+v (skipped %v), want an attempt", testQueue.Barge/10, c, skipped)
	}
	old := plantTicket(t, e, 2*testQueue.Barge)
	if c, skipped := look(); c == nil || !skipped {
		t.Fatalf("free lock, a waiter queued %v ago: look said %+v (skipped %v), want to queue behind it", 2*testQueue.Barge, c, skipped)
	}
	old.Close()
	young.Close()
}

// plantTicket queues a waiter that arrived age ago on F.lock, through a
// descriptor of its own; closing it leaves the queue.
func plantTicket(t *testing.T, e *testEnv, age time.Duration) *os.File {
	t.Helper()
	f, err := os.Open(e.lock)
	if err != nil {
		t.Fatal(err)
	}
	if !testQueue.Join(int(f.Fd()), wake.Now()-int64(age)) {
		t.Fatal("testQueue.Join failed")
	}
	return f
}

// A caller that releases and asks again at once may overtake a waiter,
// but only for testQueue.Barge: after that it queues behind the waiter, which
// gets the lock. The bound checked here is generous (noisy machines); the
// wait is logged.
func TestGreedyCallerDoesNotStarveWaiter(t *testing.T) {
	if !ofdSupported {
		t.Skip("no waiter queue without OFD locks")
	}
	e := newEnv(t)
	stop := make(chan struct{})
	greedy := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				greedy <- n
				return
			default:
			}
			h, err := Lock(context.Background(), e.state, e.opts(WithWait(10*time.Second))...)
			if err != nil {
				t.Error(err)
				greedy <- n
				return
			}
			n++
			if err := h.Unlock(); err != nil {
				t.Error(err)
			}
		}
	}()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	h, err := Lock(context.Background(), e.state, e.opts(WithWait(10*time.Second))...)
	waited := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	h.Unlock()
	close(stop)
	n := <-greedy
	t.Logf("waited %v while a greedy caller took the lock %d times", waited, n)
	if limit := testQueue.Barge + time.Second; waited > limit {
		t.Fatalf("waited %v, more than %v", waited, limit)
	}
}

// A caller that only ever saw the holder through the kernel lock (its
// look and peeks read no record) still names the holder when it times out.
func TestTimeoutNamesHolderSeenThroughKernelLock(t *testing.T) {
	e := newEnv(t)
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Unlock()
	_, err = Lock(context.Background(), e.state, e.opts(WithWait(300*time.Millisecond))...)
	var le *LockError
	if !errors.As(err, &le) || le.Code != ReasonAcquireTimeout {
		t.Fatalf("got %v, want an acquire timeout", err)
	}
	var w *WaitError
	if !errors.As(err, &w) {
		t.Fatalf("timeout error %q carries no *WaitError", err)
	}
	want := fmt.Sprintf("held by pid %d on this host", os.Getpid())
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "held by "+w.Holder) || !strings.Contains(w.Holder, " since ") {
		t.Fatalf("timeout error %q (holder %q) does not say %q and since when", err, w.Holder, want)
	}
	// The cause's counts are the ones the message reports.
	if w.Attempts < 1 || w.Elapsed <= 0 || !strings.Contains(err.Error(), fmt.Sprintf("(%d attempts)", w.Attempts)) {
		t.Fatalf("timeout error %q: cause says %d attempts over %s", err, w.Attempts, w.Elapsed)
	}
}
