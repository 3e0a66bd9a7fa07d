package statelock

import (
	"time"

	"github.com/exactfs/exactfs/statelock/internal/wake"
)

// linger keeps a sticky watcher (sticky.go, watch) alive while nothing is
// kept, for the rest of the idle time of the last release: in a loop that
// re-locks at once, the record is taken back (resumeSticky) between two
// releases, and a watcher that ended then would be started again by the
// next release. Starting a goroutine wakes a runtime thread (another M
// spins up, steals it, finds nothing kept, parks again): measured, one
// futex wake and two context switches per uncontended Update, a watcher
// started for about every third cycle. A watcher that lingers through the
// re-lock is woken only when the idle time it sleeps for is up, or by a
// ring, whichever the release that keeps again finds it doing.
//
// It is called with e.mu held and nothing kept (e.r nil). It reports false,
// e.mu still held, when the watcher should end: the idle time is up, or
// ReleaseKept kicked it (it waits for every watcher to end). Otherwise it
// sleeps, on mb's bell when the watcher mapped one (a seated waiter, or
// ReleaseKept, rings it) or on a timer and the kick, and reports true with
// e.mu released: the watcher looks again.
//
// Lingering changes no decision: what a watcher does with a kept record
// depends on e.r, e.retry and e.releasedAt at the moment it looks, as it
// did for a watcher just started; a lingering watcher only replaces that
// start.
func (e *stickyEntry) linger(mb *wake.Mailbox) bool {
	if e.releasedAt.IsZero() {
		return false
	}
	left := stickyIdle - time.Since(e.releasedAt)
	if left <= 0 {
		return false
	}
	select {
	case <-e.kick:
		return false
	default:
	}
	if mb != nil {
		bell := mb.Bell()
		e.mu.Unlock()
		mb.BellWait(bell, left)
		return true
	}
	e.mu.Unlock()
	t := time.NewTimer(left)
	select {
	case <-t.C:
		return true
	case <-e.kick:
		t.Stop()
		e.mu.Lock()
		return false
	}
}
