package statelock

import (
	"context"
	"errors"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/statelock/internal/wake"
)

// acquisition is one acquire call: its budget and what its attempts have
// learned so far.
type acquisition struct {
	l       *locker
	ctx     context.Context
	budget  time.Duration
	once    bool // TryLock: one attempt
	start   time.Time
	bo      wake.Backoff // the sleeps while a holder keeps the lock
	claimBo wake.Backoff // the sleeps while the transition claim is busy
	w       *wake.Watch
	tk      *wake.Ticket
	// armed is whether the watch and the place in the queue were set up
	// (after the first contention). It is not w != nil: where inotify is
	// unavailable the watch is nil for good, and every wait after the
	// first must still sleep its backoff step.
	armed bool
	// seen is what a waiter observed just before its last attempt; a wake
	// that finds the same is spurious (observation).
	seen observation
	// claimBusy is since when every attempt has found the transition claim
	// busy (zero: the last one did not).
	claimBusy time.Time
	// attempts made, and the contention of the last one that looked at
	// the lock itself (a skipped attempt keeps the one before).
	attempts int
	last     *contention
	// arrived is when this caller first took a seat in the mailbox (its
	// ticket there: Go waiters are served in arrival order, and a waiter
	// that withdrew and seats again keeps its place).
	arrived int64
	// direct: the next attempt goes under the claim at once, without a
	// peek (a seated waiter that saw the holder go: the slot locks of the
	// waiters still seated would read as a holder to a peek).
	direct bool
}

// tried says how an attempt that did not take the lock went.
type tried struct {
	skipped bool // no attempt: others go first
	behind  bool // waiting for a waiter ahead, not for the holder
}

// end gives back the watch and the place in the queue.
func (a *acquisition) end() { a.w.Close(); a.l.leave(a.tk) }

// try makes one attempt. It only looks, without taking the claim, when it
// can tell the lock is not for it now: a new caller at a holder the kernel
// vouches for, or at waiters that have waited long enough to go first
// (wake.Queue) (taking the claim while the lock is held would only write
// records for nothing, and every such write is more for the holder's fsync
// to flush); a queued waiter that is not first; a waiter on a holder, so
// that waiters do not crowd the claim the holder needs to release.
// Otherwise it attempts under the claim.
func (a *acquisition) try() (h *heldRecord, c *contention, how tried, err error) {
	l := a.l
	switch {
	case a.attempts == 1 && !a.once:
		c, how.skipped = l.look()
		how.behind = how.skipped
	case a.tk != nil && !l.first(a.tk):
		c, how = a.last, tried{skipped: true, behind: true}
	case a.direct:
		a.direct = false
	case a.last != nil:
		c = l.peek(a.last, a.tk)
	}
	if c == nil && !a.once && (l.yielding() || l.stickyYielding()) {
		// Go yields a tombstone to a reference contender for a moment
		// (handoff.go, the policy's Yield).
		c, how = &contention{reason: ReasonOwnerLive, holder: "a TypeScript contender's turn"}, tried{skipped: true}
	}
	if c == nil {
		h, c, err = l.attempt()
	}
	return h, c, how, err
}

// held is the Held of a record just taken; the crash residue is swept
// when due (reclaimed from a dead holder, or first held in this process).
func (a *acquisition) held(h *heldRecord) *Held {
	held := &Held{l: a.l, rec: h}
	if a.l.sweepDue || a.l.firstHold() {
		held.residue = a.l.sweepResidue()
	}
	watchHeld(held)
	return held
}

// wait follows an attempt that met contention c: it fails (one attempt
// only, or the budget is spent) or sleeps until the next attempt is due
// (a busy claim: a short backoff; a holder: the watch of F.lock, armed
// with a place in the queue after the first contention, and then looked at
// again at once).
func (a *acquisition) wait(c *contention, how tried) error {
	if c == nil {
		c = &contention{reason: ReasonOwnerLive, holder: "an unidentified holder"}
	}
	if !how.skipped || a.last == nil {
		a.last = c
	}
	remaining := a.budget - time.Since(a.start)
	switch {
	case a.once:
		return a.fail(c.reason, c, nil)
	case remaining <= 0:
		return a.fail(timeoutReason(c), c, nil)
	case c.reason == ReasonTransitionClaimTimeout && !how.skipped:
		if a.claimBusy.IsZero() {
			a.claimBusy = time.Now()
		}
		if time.Since(a.claimBusy) >= claimMinAge {
			// A claim is held for a few file operations. One that every
			// attempt has found busy for this long is stuck (its taker
			// stopped, or died where no rule may break it): waiting on
			// it is waiting on a holder, and paced like it.
			a.claimBo.Max = wake.BackoffMax
		}
		if err := wake.Sleep(a.ctx, a.claimBo.Step(remaining)); err != nil {
			return a.fail(timeoutReason(c), c, err)
		}
		return nil
	}
	a.claimBo.Reset()
	a.claimBo.Max, a.claimBusy = a.l.cfg.policy.ClaimRetryMax, time.Time{}
	if !a.armed {
		// Arm the watch and take a place in the queue, then look again at
		// once: a release between the failed attempt and the watch would
		// otherwise cost a full sleep. Once only: with no inotify the
		// watch stays nil and the waits below are plain timed sleeps.
		a.armed = true
		a.w = wake.NewWatch(a.l.dir.Name(), a.l.lockName, !a.l.cfg.policy.Watch)
		a.tk = a.l.join(nil)
		return nil
	}
	// The sleep bounds how late a change that produced no event is
	// noticed (a TypeScript holder's death makes none); a release wakes
	// us through the watch. So the backoff keeps growing across wakes:
	// resetting it would make every waiter poll at 5 ms after each
	// handoff. A wake that finds F.lock and the queue exactly as they
	// were before the last attempt is spurious (our own attempt's
	// closes, another waiter's, a reader's): the attempt would fail
	// again on the same state, so sleep on to the same deadline.
	deadline := time.Now().Add(a.bo.Step(remaining))
	for {
		d := time.Until(deadline)
		if d <= 0 {
			return nil
		}
		woke, err := a.w.Wait(a.ctx, d, !how.behind)
		if err != nil {
			return a.fail(timeoutReason(c), c, err)
		}
		if !woke || !a.l.observe(a.tk).same(a.seen) {
			return nil
		}
		hook.Fire(hook.LockWaitUnchanged, a.l.lockPath)
	}
}

// observe records what the waiter sees just before an attempt (see
// observation); a new caller, which has no watch yet, observes nothing.
func (a *acquisition) observe() {
	if a.w != nil {
		a.seen = a.l.observe(a.tk)
	}
}

// failed is the error of an attempt that failed, by the step that failed.
func (a *acquisition) failed(err error) error {
	var u *unsafeError
	if errors.As(err, &u) {
		return a.fail(ReasonUnsafePathType, nil, u.err)
	}
	var ut *untrustedError
	if errors.As(err, &ut) {
		return a.fail(ReasonUntrusted, nil, ut.err)
	}
	var ie *initError
	if errors.As(err, &ie) {
		return a.fail(ReasonInitFailed, nil, ie.err)
	}
	return a.fail(ReasonInspectionFailed, nil, err)
}

// fail is the acquisition's error: reason, the holder of c (if any) with
// its age as of now, the attempts and the time spent, and the cause.
func (a *acquisition) fail(reason Reason, c *contention, err error) error {
	holder := ""
	if c != nil {
		holder = a.l.described(c).who()
	}
	return lockError(a.l.lockPath, reason, a.attempts, time.Since(a.start), holder, err)
}

// The waiter queue of processes that are not seated in the mailbox is
// wake.Queue (its fairness rules are documented there); its tickets begin
// at queueBase of F.lock's inode, beyond the holder's range. What stays
// here is the descriptor side: which inode a ticket is queued on, opened
// by the proofs of this package (openProbe), and the move to a new inode
// of F.lock after a reclaim.

// join puts the caller in the queue on F.lock's current inode, through a
// read-only descriptor of its own (its close, when the caller leaves the
// queue, is what wakes the waiters behind it).
func (l *locker) join(t *wake.Ticket) *wake.Ticket {
	if !ofdSupported {
		return nil
	}
	if t == nil {
		t = wake.NewTicket()
	}
	p := l.openProbe(l.lockName)
	if p.fd < 0 {
		return t
	}
	if !l.cfg.policy.Move(t, int(p.fd), p.ino) {
		p.close()
	}
	return t
}

// first reports whether the waiter may attempt now (wake.Queue.First). It
// moves the ticket to a new inode of F.lock (after a reclaim), keeping its
// place.
func (l *locker) first(t *wake.Ticket) bool {
	if t == nil {
		return true
	}
	if fi, err := l.dir.Lstat(l.lockName); err == nil {
		if id, ok := fi.Sys().(exactfs.Identity); ok && id.Ino != t.Ino {
			l.join(t)
		}
	}
	return l.cfg.policy.First(t)
}

// leave drops the caller's place in the queue (wake.Queue.Drop says why
// the order of unlock and close matters).
func (l *locker) leave(t *wake.Ticket) { l.cfg.policy.Drop(t) }
