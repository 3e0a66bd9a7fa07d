//go:build unix

package statelock

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
)

// observeLeaks replaces leakReport for one test and returns the reports.
func observeLeaks(t *testing.T) <-chan string {
	t.Helper()
	reports := make(chan string, 8)
	old := leakReport
	leakReport = func(msg string) { reports <- msg }
	t.Cleanup(func() { leakReport = old })
	return reports
}

// TestDroppedHeldReleased: a Held dropped without Unlock is reported, and
// its lock released, once the garbage collector finds it; without the
// cleanup the lock stays held by a live process for as long as it runs,
// and every contender waits on it.
func TestDroppedHeldReleased(t *testing.T) {
	e := newEnv(t)
	reports := observeLeaks(t)
	func() {
		if _, err := Lock(context.Background(), e.state, e.opts()...); err != nil {
			t.Fatal(err)
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		select {
		case m := <-reports:
			if !strings.Contains(m, e.lock) || !strings.Contains(m, "without a call to Unlock; it was released") {
				t.Fatalf("report: %s", m)
			}
			h, err := TryLock(e.state, e.opts()...)
			if err != nil {
				t.Fatalf("the dropped lock is still held: %v", err)
			}
			if err := h.Unlock(); err != nil {
				t.Fatal(err)
			}
			assertSteadyState(t, e, true)
			return
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("a Held dropped without Unlock was never reported")
		}
	}
}

// TestUnlockedHeldNotReported: a Held released by its holder is never
// reported, nor released a second time, when it is collected.
func TestUnlockedHeldNotReported(t *testing.T) {
	e := newEnv(t)
	reports := observeLeaks(t)
	func() {
		h, err := Lock(context.Background(), e.state, e.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Unlock(); err != nil {
			t.Fatal(err)
		}
	}()
	for range 20 {
		runtime.GC()
		select {
		case m := <-reports:
			t.Fatalf("an unlocked Held was reported: %s", m)
		case <-time.After(10 * time.Millisecond):
		}
	}
	assertSteadyState(t, e, true)
}
