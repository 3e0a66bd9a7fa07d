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
// sleeps, on the bell of the mailbox the watcher mapped (*mbp; a seated
// waiter, or ReleaseKept, rings it) or on a timer and the kick, and
// reports true with e.mu released: the watcher looks again.
//
// Lingering changes no decision: what a watcher does with a kept record
// depends on e.r, e.retry and e.releasedAt at the moment it looks, as it
// did for a watcher just started; a lingering watcher only replaces that
// start.
func (e *stickyEntry) linger(mbp **wake.Mailbox, donep *func()) bool {
	if e.releasedAt.IsZero() {
		return false
	}
	left := e.stickyIdle - time.Since(e.releasedAt)
	if left <= 0 {
		return false
	}
	select {
	case <-e.kick:
		if !e.remap {
			return false
		}
		e.remap = false // mapped at the next look at a kept record
	default:
	}
	mb := *mbp
	if mb == nil {
		// The watcher found no mailbox when it mapped one (*donep is the
		// no-op it set then); it maps only when done is nil. A mailbox
		// made since (a first waiter of another process) is looked for
		// again at its next look at a kept record, one lstat per
		// lingering, so that a watcher that lives on does not keep
		// sleeping deaf to the rings of waiters seated there.
		*donep = nil
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
		// ReleaseKept (nothing kept: the watcher ends), or a release
		// that kept again and found a mailbox this watcher has not
		// mapped (lookForMailbox: the watcher goes on, and maps it at
		// its next look at a kept record; a Lock of this process may
		// have taken the record back already, and then it lingers on).
		t.Stop()
		e.mu.Lock()
		if e.remap {
			e.remap = false
			e.mu.Unlock()
			return true
		}
		return false
	}
}

// lookForMailbox (e.mu held) is keep's, when the running watcher has no
// mailbox mapped (e.ring nil) and the release that keeps again found one:
// a waiter of another process has seated there, or will. A watcher
// lingering without one sleeps on a timer for the rest of the idle time,
// deaf to the waiter's ring; the kick ends the lingering, and the watcher,
// finding the record kept, maps the mailbox (linger left it due to) and
// serves a seated waiter at once, as a watcher started by this keep would
// have. A watcher asleep on a kept record without a mailbox wakes and
// sleeps on, as before lingering: the idle time bounds that wait. This
// wake is paid once per watcher, when the mailbox first appears, never
// per cycle.
//
// keep calls it too when it keeps a record behind a busy claim (retry): a
// lingering watcher would otherwise try that release only when its idle
// time is up (the default 2 ms, but a policy may make it long). A watcher
// asleep on the mailbox's bell is rung: the kick does not reach it there.
func (e *stickyEntry) lookForMailbox() {
	e.remap = true
	select {
	case e.kick <- struct{}{}:
	default:
	}
	if e.ring != nil {
		e.ring.Ring()
	}
}
