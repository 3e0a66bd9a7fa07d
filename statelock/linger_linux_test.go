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
	longSticky(t)
	e := newEnv(t)
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
