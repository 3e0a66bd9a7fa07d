//go:build linux && !exactfs_portable

package statelock

import (
	"context"
	"testing"
	"time"
)

// A sticky watcher whose record a re-lock of this process took back lives
// on for the idle time of the last release (linger.go), so that a loop
// that re-locks does not start a goroutine, and wake a runtime thread, at
// every release. Here the watcher is made to look while the record is
// taken back: the mailbox's bell is rung while this process holds the
// resumed lock (a watcher that is not asleep yet looks then anyway). On
// the old code the watcher ended at that look (nothing kept) and the next
// release started another; it must still be watching, and the releases
// that follow must find it so.
func TestStickyWatcherLingersThroughRelock(t *testing.T) {
	e := newEnv(t)
	longSticky(t, e)
	l, err := newLocker(e.state, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	mb, done := l.mailbox(true)
	if mb == nil {
		t.Fatal("no mailbox")
	}
	defer done()
	stickyCycle(t, e)
	stickyCycle(t, e) // kept: a watcher runs
	entry := l.stickyFor(false)
	if entry == nil {
		t.Fatal("no sticky entry after a kept release")
	}
	watching := func() bool {
		entry.mu.Lock()
		defer entry.mu.Unlock()
		return entry.watching
	}
	if !watching() {
		t.Fatal("a kept release started no watcher")
	}
	for i := range 3 {
		h, err := Lock(context.Background(), e.state, e.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		mb.Ring()
		// Whatever the watcher does with the ring, it does at once; an
		// ended watcher is seen within this time on any machine that runs
		// the test at all.
		for deadline := time.Now().Add(500 * time.Millisecond); time.Now().Before(deadline); {
			if !watching() {
				t.Fatalf("cycle %d: the watcher ended while the record was taken back", i)
			}
			time.Sleep(time.Millisecond)
		}
		if err := h.Unlock(); err != nil {
			t.Fatal(err)
		}
		if r := recordAt(t, e); r.Released {
			t.Fatalf("cycle %d: the release did not keep: %s", i, mustRead(t, e.lock))
		}
	}
	letGoKept()
	if watching() {
		t.Fatal("ReleaseKept returned with a watcher still running")
	}
	assertSteadyState(t, e, false)
}

// A watcher that lingers without a mailbox (none existed when it looked)
// sleeps on a timer, deaf to rings. When a release keeps the record again
// and finds a mailbox made meanwhile (a waiter of another process made
// it), the watcher must map it and sleep on its bell, as a watcher
// started by that release would: without that (keep's lookForMailbox,
// linger's remap), it slept out the idle time (here an hour) and a waiter
// seated there was served only at the idle time's end.
func TestStickyLingeringWatcherFindsNewMailbox(t *testing.T) {
	e := newEnv(t)
	longSticky(t, e)
	stickyCycle(t, e)
	stickyCycle(t, e) // kept: a watcher runs, with no mailbox to map
	l, err := newLocker(e.state, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	entry := l.stickyFor(false)
	if entry == nil {
		t.Fatal("no sticky entry after a kept release")
	}
	ringing := func() bool {
		entry.mu.Lock()
		defer entry.mu.Unlock()
		return entry.ring != nil
	}
	time.Sleep(50 * time.Millisecond) // the watcher's first look, at the kept record
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	// Wake the watcher while the record is taken back: it lingers.
	select {
	case entry.kick <- struct{}{}:
	default:
	}
	time.Sleep(50 * time.Millisecond)
	mb, done := l.mailbox(true)
	if mb == nil {
		t.Fatal("no mailbox")
	}
	defer done()
	if ringing() {
		t.Fatal("the watcher mapped a mailbox that did not exist")
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	if r := recordAt(t, e); r.Released {
		t.Fatalf("the release did not keep: %s", mustRead(t, e.lock))
	}
	for deadline := time.Now().Add(10 * time.Second); !ringing(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the lingering watcher never mapped the mailbox made while it lingered")
		}
	}
}
