package statelock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/statelock/internal/wake"
)

// Held is a state-file lock this process holds. Unlock it exactly once.
type Held struct {
	l       *locker
	rec     *heldRecord
	residue []Residue
	mu      sync.Mutex
	done    bool
	cleanup runtime.Cleanup // leak.go; stopped by unlock
}

// Residue returns the crash residue of the state file this acquisition
// swept (see the package documentation): each entry removed, or kept with
// the reason. It is empty when there was nothing, or no sweep was due (the
// lock was not reclaimed from a dead holder, and this process had held it
// before).
func (h *Held) Residue() []Residue { return h.residue }

// Token returns the token of this acquisition: the random UUID its owner
// record carries (the "token" field every peer writes), unique per
// acquisition. State written under the lock can carry it so that a later
// reader can tell which acquisition wrote it, and whether that is the one
// holding the lock now.
//
// It is not ordered: comparing two tokens says whether they are the same
// acquisition, never which came later, so it cannot serve as a fencing
// token that a storage service compares with the highest it has seen. This
// lock needs none for its own safety: it has no expiry, and a holder loses
// it only when it is proved dead, so no live holder is ever superseded.
// Where holders can be superseded while alive and an ordered token is
// needed, use store.AcquireLease, whose Lease.Fence strictly increases.
func (h *Held) Token() string { return h.rec.rec.Token }

// LockPath returns the path of the owner record, F.lock.
func (h *Held) LockPath() string { return h.l.lockPath }

// Lock acquires the lock of stateFile (the owner record stateFile.lock),
// waiting up to the wait budget and no longer than ctx allows. The budget is
// WithWait's when given; otherwise ctx's deadline when it has one, however
// far away; otherwise DefaultWait. A holder that is provably dead is reclaimed at
// once, without waiting out any timeout. On failure the error is a
// *LockError; errors.Is(err, ErrLocked) when someone held the lock
// throughout.
//
// Before it returns, the rename of the state file that a previous holder
// made is durable (readable): an Update releases early, before its
// directory fsync, and a caller of Lock may read the state file and act on
// what it read without ever writing it (SPEC §4.6, the readers' rule).
func Lock(ctx context.Context, stateFile string, opts ...Option) (*Held, error) {
	h, err := lockState(ctx, stateFile, opts)
	if err != nil {
		return nil, err
	}
	return h.readable()
}

// readable is the readers' rule (SPEC §4.6): nothing a holder is told may
// rest on bytes that are not yet durable, and the last holder may have
// released early, before its directory fsync returned. One fsync of the
// directory makes its rename durable (it finds nothing to flush when that
// holder's own fsync already did). On failure the lock is given back and
// the error says the state file's bytes may not survive a power cut.
func (h *Held) readable() (*Held, error) {
	if err := h.readDurable(); err != nil {
		return nil, errors.Join(err, h.Unlock())
	}
	return h, nil
}

// readDurable is the fsync of readable, for a holder that keeps the lock
// (Update's paths that write nothing). When the lock was handed to us by
// an Update that released before its directory fsync and promised it,
// waiting for that fsync is enough (readsync.go).
func (h *Held) readDurable() error {
	if h.l.grantersSync() {
		return nil
	}
	hook.Fire(hook.LockReadersRuleSync, h.l.lockPath)
	if err := h.l.dir.Sync(); err != nil {
		return fmt.Errorf("%s: the state file's last replacement could not be made durable before it is read under the lock "+
			"(a power cut could still undo what it holds): %w", h.l.lockPath, err)
	}
	return nil
}

// lockState is Lock without the readers' rule: for Update, whose read is
// made durable by its own write, or by readable when it writes nothing.
func lockState(ctx context.Context, stateFile string, opts []Option) (*Held, error) {
	return lockStateWith(ctx, stateFile, newConfig(opts))
}

// lockStateWith is lockState for a caller that has the options applied
// already (Update: its config, the group's budget set on it).
func lockStateWith(ctx context.Context, stateFile string, c config) (*Held, error) {
	l, err := openLockerWith(stateFile, c, true)
	if err != nil {
		return nil, err
	}
	budget := l.cfg.wait
	if _, ok := ctx.Deadline(); ok && !l.cfg.waitSet {
		budget = WaitForever // the deadline ends the wait
	}
	h, err := l.acquire(ctx, budget, budget <= 0)
	if err != nil {
		l.close()
		return nil, err
	}
	return h, nil
}

// TryLock makes one attempt to acquire the lock of stateFile. A holder
// (or a busy transition claim) fails it with an error that satisfies
// errors.Is(err, ErrLocked). A provably dead holder is still reclaimed.
// The readers' rule of Lock applies.
func TryLock(stateFile string, opts ...Option) (*Held, error) {
	l, err := newLocker(stateFile, opts)
	if err != nil {
		return nil, err
	}
	h, err := l.acquire(context.Background(), 0, true)
	if err != nil {
		l.close()
		return nil, err
	}
	return h.readable()
}

// acquire runs attempts until one succeeds, the budget runs out or ctx is
// done. Between attempts it sleeps (backoff, woken early by a change of
// F.lock), so a waiter costs almost no CPU. The steps are acquisition's
// (acquire.go).
func (l *locker) acquire(ctx context.Context, budget time.Duration, once bool) (*Held, error) {
	a := acquisition{l: l, ctx: ctx, budget: budget, once: once, start: time.Now()}
	a.claimBo.Min, a.claimBo.Max = l.cfg.policy.ClaimRetryMin, l.cfg.policy.ClaimRetryMax
	defer a.end()
	wake.Breathe()
	if ctx.Err() == nil {
		if h := l.resumeSticky(ctx); h != nil {
			return a.held(h), nil // the record this process kept (sticky.go)
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, a.fail(timeoutReason(a.last), a.last, err)
		}
		a.attempts++
		hook.Fire(hook.LockAttempt, l.lockPath)
		a.observe()
		h, c, how, err := a.try()
		switch {
		case err != nil:
			return nil, a.failed(err)
		case h != nil:
			return a.held(h), nil
		}
		if h, done, err := a.handoffWait(c); done {
			if err != nil {
				return nil, err
			}
			return a.held(h), nil
		} else if h == nil && err == nil && a.direct {
			continue // withdrew from the mailbox: attempt at once
		}
		if err := a.wait(c, how); err != nil {
			return nil, err
		}
	}
}

func timeoutReason(c *contention) Reason {
	if c != nil && c.reason == ReasonTransitionClaimTimeout {
		return ReasonTransitionClaimTimeout
	}
	return ReasonAcquireTimeout
}

// initError marks a failure to create what the protocol needs (the claim
// directory, a record) as opposed to a failure to read what is there.
type initError struct{ err error }

func (e *initError) Error() string { return e.err.Error() }
func (e *initError) Unwrap() error { return e.err }

// attempt makes one acquisition under the transition claim.
func (l *locker) attempt() (*heldRecord, *contention, error) {
	var (
		h *heldRecord
		c *contention
	)
	busy, err := l.withClaim(func() error {
		var err error
		h, c, err = l.takeRecord(l.lockName, l.lockOwner(), false)
		return err
	})
	if busy != nil {
		return nil, busy, nil
	}
	if err != nil {
		if h != nil {
			// The claim could not be given back after F.lock became ours.
			// Do not keep a lock acquired in a state we cannot vouch for:
			// tombstone our own record through our own descriptor.
			l.rewrite(l.lockName, h.f, h.id, h.data, l.tombstone().Encode(), false)
			h.f.Close()
		}
		return nil, nil, err
	}
	return h, c, nil
}

// peek reports a holder that the kernel vouches for, without the claim: an
// OFD lock on F.lock is held only by a live exactfs holder (or one in the
// middle of releasing). It returns nil when it cannot tell, and the caller
// makes a full attempt. It asks through the waiter's ticket descriptor when
// there is one (first keeps it on F.lock's current inode), else through a
// descriptor of its own.
//
// It does not read the record: who holds it was described by the last full
// attempt (or is described when a timeout is reported), and a waiter peeks
// after every wake, so it stays cheap.
func (l *locker) peek(last *contention, tk *wake.Ticket) *contention {
	var held, known bool
	if tk != nil && tk.Fd >= 0 {
		held, known = ofdHeldFd(exactfs.LockFD(tk.Fd))
	} else {
		l.probeLocks(l.lockName, func(fd exactfs.LockFD) { held, known = ofdHeldFd(fd) })
	}
	if !known || !held {
		if known && last.seen != nil && last.seen.s.rec.KernelLock {
			// The record claims the kernel lock, and the kernel says
			// nobody holds it: its holder is gone or going, attempt.
			return nil
		}
		return l.peekUnchanged(last)
	}
	c := heldByKernel()
	if last != nil && last.reason == ReasonOwnerLive {
		c.holder, c.since = last.holder, last.since
	}
	return c
}

func heldByKernel() *contention {
	return &contention{reason: ReasonOwnerLive, holder: "an exactfs process (its kernel lock on the record is held)"}
}

// look is a new caller's first look at F.lock, through the process's
// shared read-only descriptor on it (lookProbe: nothing is opened or closed
// per call, so no waiter is woken): a holder the kernel vouches for (wait
// for it), a waiter queued for longer than the queue's Barge (queue behind
// it: skipped), or neither (nil: attempt, even past younger waiters).
func (l *locker) look() (c *contention, skipped bool) {
	if !ofdSupported {
		return nil, false
	}
	fd, at, done := l.lookProbeAt(l.lockName)
	if fd < 0 {
		return nil, false
	}
	defer done()
	switch who, start := l.cfg.policy.Who(int(fd)); who {
	case wake.Holder:
		c := heldByKernel()
		c.slot = start >= slotBase // a kernel slot (SPEC §4.8.1): a Go cohort owner's, or a seated waiter's
		if c.slot {
			c.at = at
		}
		return c, false
	case wake.Waiter:
		// The kernel named a waiter; a holder may be there as well.
		if held, _ := ofdHeldFd(fd); held {
			return heldByKernel(), false
		}
		if l.cfg.policy.Starving(int(fd)) {
			return &contention{reason: ReasonOwnerLive, holder: "processes queued before us"}, true
		}
	}
	return nil, false
}

// described returns c, or when c names its holder only vaguely (a peek or
// the queue said the lock is taken, nobody read the record), a description
// of whoever holds F.lock now, for the error a caller sees.
func (l *locker) described(c *contention) *contention {
	if c.reason != ReasonOwnerLive || !c.since.IsZero() {
		return c
	}
	f, s, err := l.openCapture(l.lockName)
	if err != nil {
		return c
	}
	v := l.judgeRecord(s, f)
	f.Close()
	if s.released() {
		return c
	}
	return &contention{reason: c.reason, holder: l.describeWho(s, v), since: unixTime(s.id.MtimeNs)}
}

// Unlock releases the lock: under the transition claim, it proves that
// F.lock is still exactly the record this acquisition wrote (inode and
// bytes) and rewrites it in place to a released tombstone. It never unlinks
// F.lock. If the record was changed by someone else, Unlock fails loudly
// and leaves what is there alone. Unlock closes the descriptor that holds
// our kernel lock in every case, so a failed release is still visibly over.
func (h *Held) Unlock() error { return h.unlock(context.Background(), false, false) }

// UnlockContext is Unlock, but stops waiting for a busy transition claim
// when ctx is done (Unlock waits for it as long as the wait budget, at
// least DefaultWait). A release that gives up fails as Unlock's does after
// its budget: the kernel lock is dropped (exactfs peers then reclaim the
// record at once), but the record stays, and a TypeScript peer judges it
// by this process's pid, alive until the process exits.
func (h *Held) UnlockContext(ctx context.Context) error { return h.unlock(ctx, false, false) }

// unlock is Unlock. early is Update's early release: the write is still
// using the locker's directory descriptor, so it is left open (the caller
// closes it, h.l.close, once the write is done), and a grant it makes, or
// a record it keeps, promises the directory fsync to come (h.l.promised,
// readsync.go). away: this process is not about to lock again, so a
// queued waiter is woken at once (parkRecord).
func (h *Held) unlock(ctx context.Context, early, away bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return lockError(h.l.lockPath, ReasonReleaseFailed, 0, 0, "", errors.New("already unlocked"))
	}
	h.done = true
	h.cleanup.Stop()
	if !early {
		defer h.l.close()
	}
	start := time.Now()
	var promise *granterPromise
	if early {
		promise = &h.l.promised // the directory fsync comes after this release
	}
	attempts, err := h.l.release(ctx, h.rec, away, promise)
	if err != nil {
		return lockError(h.l.lockPath, ReasonReleaseFailed, attempts, time.Since(start), "", err)
	}
	return nil
}

// release takes the claim (waiting for it as long as the wait budget, at
// least DefaultWait: giving up on a release is worse than waiting) and
// rewrites the record. The record's descriptor is closed or parked
// (parkRecord) after the claim is given back, so waiters woken by its close
// find the claim free; away: see parkRecord.
func (l *locker) release(ctx context.Context, r *heldRecord, away bool, promise *granterPromise) (attempts int, err error) {
	handed, yielded, err := l.handoff(r, promise)
	if handed {
		l.handedOn() // a release, for this process's re-lock test (sticky.go)
		// F.lock is the waiter's now (handoff.go); our descriptor holds
		// nothing of it (its slot lock dropped before the grant's wake).
		// Parked, not closed: the next Lock of this process finds the
		// grantee's live record and seats itself, and its seated wait
		// takes this descriptor instead of opening F.lock again (an open
		// and a close of an *os.File: four system calls of a contended
		// cycle). Nobody waits for this close: the lock was handed over,
		// not freed, and the grantee's release wakes the queue.
		if r.f != nil {
			park([2]uint64{r.id.Dev, r.id.Ino}, r.f, l.cfg.policy.ParkIdle)
		}
		return 1, err
	}
	once := false
	// A record kept after an early release carries the promise of the
	// fsync to come to the Lock of this process that takes it back
	// (readsync.go); made here, where a record may be kept, not for every
	// release.
	var local *localSync
	if promise != nil {
		local = &localSync{done: make(chan struct{})}
	}
	switch l.stick(r, yielded, local) {
	case stickyKept:
		if promise != nil {
			promise.local = local
		}
		return 1, nil // sticky.go: kept for this process's next Lock
	case stickyClaim:
		once = true
	}
	attempts, kept, err := l.releaseReference(ctx, r, away, once)
	if kept && !l.keepBusy(r) {
		attempts, _, err = l.releaseReference(ctx, r, away, false)
	}
	return attempts, err
}

// releaseReference is the reference release: under the claim, our record
// proved and rewritten to a tombstone. once: a single attempt at the
// claim; when it is busy, nothing is done and kept reports it (r is still
// ours, its slot lock held and its descriptor open: sticky.go keeps it and
// tries again, so the caller is never blocked on a claim a dead reference
// process stranded).
//
// ctx done ends the wait as the budget's end does.
func (l *locker) releaseReference(ctx context.Context, r *heldRecord, away, once bool) (attempts int, kept bool, err error) {
	// A lock taken with WaitForever is not released forever: a claim stuck
	// that long is for a person (Recover), and Unlock must return.
	budget := DefaultWait
	if l.cfg.wait > budget && l.cfg.wait != WaitForever {
		budget = l.cfg.wait
	}
	start := time.Now()
	bo := wake.Backoff{Min: l.cfg.policy.ClaimRetryMin, Max: l.cfg.policy.ClaimRetryMax}
	for attempts := 1; ; attempts++ {
		busy, err := l.withClaim(func() error { return l.releaseRecord(r) })
		if busy != nil && once {
			return attempts, true, nil
		}
		remaining := budget - time.Since(start)
		if busy == nil || remaining <= 0 || ctx.Err() != nil {
			if busy != nil {
				err = fmt.Errorf("the transition claim stayed busy for %s: %s", roundDur(time.Since(start)), busy.holder)
				if cerr := ctx.Err(); cerr != nil && remaining > 0 {
					err = fmt.Errorf("%w (given up: %w)", err, cerr)
				}
			}
			// Unlock before the close, so the close's event finds no
			// lock (ofdUnlock).
			ofdUnlock(r.f)
			if err == nil {
				l.parkRecord(r.f, r.id, away)
			} else {
				r.f.Close()
			}
			l.nudge()
			return attempts, false, err
		}
		t := time.NewTimer(bo.Step(remaining))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

func (l *locker) releaseRecord(r *heldRecord) error {
	hook.Fire(hook.LockBeforeRelease, l.lockPath)
	// The proof through our own descriptor and an lstat of the name
	// (provenAt) is the capture through the pathname minus the open: our
	// inode still holds exactly our bytes, with the identity we recorded
	// (nlink, size, mtime, digest), and the name still names it. Only when
	// that fails is the name captured (as before), to decide and to say
	// what is there now.
	if id, err := l.provenAt(l.lockName, r.f, r.id, r.data); err != nil || !sameRecord(id, r.id) {
		cur, err := l.capture(l.lockName)
		if err != nil {
			return fmt.Errorf("our owner record is gone or unreadable: %w", err)
		}
		if !sameRecord(cur.id, r.id) || !bytes.Equal(cur.data, r.data) {
			v := l.judgeRecord(cur, nil)
			return fmt.Errorf("%w: someone else replaced our owner record; %s is now %s, left alone",
				errRecordChanged, l.lockName, l.describe(cur, v))
		}
	}
	hook.Fire(hook.LockAfterOwnerValidation, l.lockPath)
	// The proof above showed the pathname names our inode with exactly our
	// bytes; reading them again through our descriptor would prove nothing
	// new, and the identity of the tombstone is of no use to anyone (so no
	// fstat after the write). The name must still name our inode after it:
	// if someone replaced our record in between, the release fails loudly.
	if _, err := overwrite(r.f, l.path(l.lockName), int64(len(r.data)), r.data, l.tombstone().Encode()); err != nil {
		return err
	}
	return l.stillNames(l.lockName, r.id)
}

// With runs fn while holding the lock of stateFile. If fn fails and the
// release fails too, both errors are returned (errors.Join). If fn panics,
// the lock is released and the panic continues.
func With(ctx context.Context, stateFile string, fn func() error, opts ...Option) error {
	h, err := Lock(ctx, stateFile, opts...)
	if err != nil {
		return err
	}
	returned := false
	defer func() {
		if !returned {
			// fn panicked (or called runtime.Goexit): release, or the lock
			// stays held for the life of the process (see Update). Not
			// recovered: the panic goes on with its own value and stack.
			h.Unlock()
		}
	}()
	ferr := fn()
	returned = true
	return errors.Join(ferr, h.Unlock())
}
