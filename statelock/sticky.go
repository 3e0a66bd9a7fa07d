package statelock

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/statelock/internal/wake"
)

// Sticky ownership (SPEC §4.8.3; protocol-perf §4.6).
//
// A Go cohort owner (its record carries ofd_slot and its slot lock is held)
// whose release finds no Go waiter to hand F.lock to may keep it, record
// and slot lock, for at most the policy's StickyIdle (2 ms) after its
// caller's release, when:
//
//   - this process re-locked within that time of its release before (a
//     process that locks once, a CLI call, never leaves a live record
//     behind: its release is the reference one, a tombstone);
//   - no claim directory exists, and the sidecar was not written since the
//     last release (a reference contender polls through them).
//     When one does, the release is the reference one and Go takers hold
//     off the tombstone for a yield (yieldToReference, the engine the
//     hand-off uses). That release makes one attempt at the claim: a claim
//     a dead TypeScript process stranded must never block the caller, so
//     on a busy claim the record is kept and the release tried again in
//     the background (watch) until it goes through.
//
// The next Lock of this process within that time takes the record back
// (resume): one lstat proves the name still names our inode with the
// size, mtime, ctime and single link we last saw (every write of any
// kind moves the mtime or ctime, and nobody may write a live record but
// its owner: Go judges it alive by the slot lock we never dropped,
// TypeScript by our pid), then one pwrite, padded to the current size
// (§4.2), gives it a fresh token, and one read back proves the bytes.
// Token() stays what its documentation says: unique per acquisition.
//
// The idle time is watched by one goroutine per kept lock (watch), started
// when a release keeps it and ending when nothing is kept and the idle time
// of the last release is up (linger.go: a re-lock does not end it): it sleeps on the
// mailbox's bell (a seated waiter rings it, wake.Mailbox.Ring, so it is
// served at once) until the idle time of the last release is up; a
// release while it sleeps arms nothing (it only stores its time), so a
// busy loop costs no timer and no thread wake per cycle. When the time is
// up or a waiter is seated, the record is handed to the oldest seated Go
// waiter or released the reference way.
//
// A process killed or exiting while it keeps a record leaves the record of
// a dead process, exactly as a death inside a critical section does: Go
// judges it dead by its free slot, TypeScript by its pid, and either
// reclaims it at once.

// The switch (Sticky) and the idle time (StickyIdle) are the waiting
// policy's (wake.Policy), per call: tests turn it off to show what its
// guards are for, and make the idle time long so that what happens within
// it does not depend on how fast the machine is. An entry below outlives
// the call, so it takes the idle time of the release that stored its
// releasedAt (stick): both what counts as a re-lock after that release
// (resumeSticky) and how long the watcher keeps the record it kept.

// stickies are the locks this process released lately, by directory and
// name: when, and the record kept if any. At most stickyMax entries; an
// entry that keeps nothing is dropped when the map is full.
var stickies struct {
	sync.Mutex
	m map[mailboxKey]*stickyEntry
}

const stickyMax = 64

type stickyEntry struct {
	mu sync.Mutex
	// l is the locker r is kept under: its directory descriptor stays
	// open for the watcher's release (l.extra counts the reference).
	l *locker
	r *heldRecord // the kept record; nil when nothing is kept
	// releasedAt is when a caller of this process last released the lock,
	// and stickyIdle that caller's policy's StickyIdle; relocked whether
	// its last Lock came within the stickyIdle of the release before it
	// (the process re-locks: it may keep).
	releasedAt time.Time
	stickyIdle time.Duration
	relocked   bool
	// synced is the fsync the release that kept r promised (readsync.go),
	// nil for none; the Lock that takes r back waits for it.
	synced *localSync
	// retry: the kept record is due for release (a claim was seen, or a
	// busy claim refused the watcher's release); it is not taken back.
	retry bool
	// yieldUntil holds this process's own Go takers off the tombstone
	// while a reference contender has its turn (the mailbox's yield holds
	// the others; this one also works where no mailbox exists).
	yieldUntil time.Time
	watching   bool
	// letting is open while a kept record is being let go (taken off e.r
	// by the watcher or ReleaseKept, not yet released or handed on): a
	// Lock of this process waits for it to close, so that it never finds
	// its own released lock held (resumeSticky).
	letting chan struct{}
	// kick wakes a watcher that sleeps without a mailbox, ring one that
	// sleeps on its bell (ReleaseKept); ring is nil once it stops using it.
	kick chan struct{}
	ring *wake.Mailbox
	// remap says the last kick was lookForMailbox's (a mailbox to map),
	// not ReleaseKept's (end): a lingering watcher looks again on it.
	remap bool
}

// idle reports whether e may be forgotten (e.mu held): it keeps nothing,
// no watcher runs for it and no let-go is under way. What it remembers
// besides (the last release, whether this process re-locks) is only
// worth an entry while the map has room (stickyFor) and until ReleaseKept
// (forgetIdleStickies).
func (e *stickyEntry) idle() bool { return e.r == nil && !e.watching && e.letting == nil }

// stickyReport receives the failure of a release made in the background
// (the caller that released has returned). Tests replace it.
var stickyReport = func(msg string) { fmt.Fprintln(os.Stderr, msg) }

func (l *locker) stickyKey() mailboxKey {
	dev, ino := l.dir.Inode()
	return mailboxKey{dev, ino, l.lockName}
}

// stickyFor returns the entry of l's lock, creating it when create is set.
func (l *locker) stickyFor(create bool) *stickyEntry {
	key := l.stickyKey()
	stickies.Lock()
	defer stickies.Unlock()
	e := stickies.m[key]
	if e != nil || !create {
		return e
	}
	if stickies.m == nil {
		stickies.m = map[mailboxKey]*stickyEntry{}
	}
	if len(stickies.m) >= stickyMax {
		for k, o := range stickies.m {
			o.mu.Lock()
			idle := o.idle()
			o.mu.Unlock()
			if idle {
				delete(stickies.m, k)
			}
		}
		if len(stickies.m) >= stickyMax {
			return nil
		}
	}
	e = &stickyEntry{kick: make(chan struct{}, 1)}
	stickies.m[key] = e
	return e
}

// stickyOn reports whether l may keep or take back a record.
func (l *locker) stickyOn() bool { return l.cfg.policy.Sticky && l.cohort() }

// resumeSticky is a Lock's first step: it takes back the record this
// process kept, if any, and notes whether this Lock is a re-lock.
func (l *locker) resumeSticky(ctx context.Context) *heldRecord {
	if !l.stickyOn() {
		return nil
	}
	e := l.stickyFor(false)
	if e == nil {
		return nil
	}
	e.mu.Lock()
	for e.letting != nil {
		// The record is on its way out (a hand-off or one release, a
		// bounded step): wait for it, or this Lock would find the lock
		// its own caller released still held by this process, and a
		// TryLock would fail on it.
		ch := e.letting
		e.mu.Unlock()
		hook.Fire(hook.LockStickyAwaitLetGo, l.lockPath)
		select {
		case <-ch:
		case <-ctx.Done():
			return nil
		}
		e.mu.Lock()
	}
	now := time.Now()
	e.relocked = !e.releasedAt.IsZero() && now.Sub(e.releasedAt) <= e.stickyIdle
	r, kl := e.r, e.l
	if r == nil || e.retry || now.Before(e.yieldUntil) || kl.host.ID != l.host.ID || kl.euid != l.euid {
		e.mu.Unlock()
		return nil
	}
	e.r, e.l = nil, nil
	synced := e.synced
	e.synced = nil
	e.mu.Unlock()
	h, err := l.resume(r)
	kl.close()
	if err != nil {
		// Not ours as we left it: give it up the proved way (the release
		// proves our bytes before it writes, and leaves a record someone
		// else wrote alone), and acquire as any caller does.
		if _, _, rerr := l.releaseReference(context.Background(), r, true, false); rerr != nil {
			stickyReport(fmt.Sprintf("exactfs: the lock %s this process kept could not be taken back (%v) nor released: %v", l.lockPath, err, rerr))
		}
		return nil
	}
	hook.Fire(hook.LockStickyResumed, l.lockPath)
	l.granted = syncPromise{local: synced}
	return h
}

// resume proves that the kept record r is still ours at F.lock and gives
// it a fresh token (see the top of this file).
func (l *locker) resume(r *heldRecord) (*heldRecord, error) {
	st, err := l.dir.LstatRaw(l.lockName)
	if err != nil {
		return nil, err
	}
	if st.Dev != r.id.Dev || st.Ino != r.id.Ino || st.Nlink != 1 || st.Nlink != r.id.Nlink ||
		st.Size != r.id.Size || st.MtimeNs != r.id.MtimeNs || st.CtimeNs != r.id.CtimeNs {
		return nil, fmt.Errorf("%w: %s changed while this process kept it", errRecordChanged, l.lockPath)
	}
	rec := *r.rec
	rec.Token = exactfs.NewUUID()
	want := padTo(rec.Encode(), int64(len(r.data)))
	if len(want) != len(r.data) {
		return nil, fmt.Errorf("the new record of %s does not fit in the kept one", l.lockPath)
	}
	if _, err := r.f.WriteAt(want, 0); err != nil {
		// Our old bytes go back: the proved release then finds them.
		writeAll(r.f, l.lockPath, r.data, -1)
		return nil, err
	}
	data, id, err := readHeld(r.f)
	if err != nil || !bytes.Equal(data, want) || !id.SameInode(r.id) {
		// Someone wrote over us in between: nothing to take back. The
		// release that follows proves against bytes we no longer claim
		// (ours are gone), so it leaves whatever is there alone.
		if err == nil {
			err = fmt.Errorf("%w: %s changed under the new token's write", errRecordChanged, l.lockPath)
		}
		return nil, err
	}
	return &heldRecord{name: r.name, f: r.f, id: id, data: data, rec: &rec}, nil
}

// stickyOutcome is what a release decided about keeping F.lock.
type stickyOutcome int

const (
	stickyNo    stickyOutcome = iota // release the reference way, as before
	stickyKept                       // kept: nothing more to do
	stickyClaim                      // a claim directory: one reference attempt, then keep
)

// stick is the release's decision (after the hand-off found nobody, or
// yielded: then the release is the reference one, whose tombstone is what
// the yield is for).
func (l *locker) stick(r *heldRecord, yielded bool, synced *localSync) stickyOutcome {
	if !l.stickyOn() || r.rec == nil || r.rec.OfdSlot == 0 || r.kept {
		return stickyNo
	}
	e := l.stickyFor(true)
	if e == nil {
		return stickyNo
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.releasedAt, e.stickyIdle = time.Now(), l.cfg.policy.StickyIdle
	if yielded || !e.relocked || e.r != nil || e.releasedAt.Before(e.yieldUntil) {
		// Not while this process yields to a reference contender: the
		// yield is for it to find the tombstone, and a record kept now
		// would not be taken back by this process's own next Lock either
		// (resumeSticky leaves it alone during a yield, so a TryLock
		// would fail on the lock its own caller had released).
		return stickyNo
	}
	if _, err := l.dir.LstatRaw(l.claim); err == nil {
		attested := l.claimAttested()
		hook.Fire(hook.LockStickyClaimSeen, l.lockPath)
		if !attested {
			e.yieldUntil = time.Now().Add(l.cfg.policy.Yield)
			l.yieldToReference()
		}
		return stickyClaim
	}
	if time.Since(e.yieldUntil) > l.cfg.policy.YieldEvery && l.referencePolling() {
		// Its claim is not there at this instant, but its sidecar was
		// written since our last release (handoff.go): a reference
		// contender polls between its backoff sleeps. Keeping would
		// show it a live owner at every attempt; it gets the tombstone
		// and a yield instead, as at a claim directory; at most one
		// yield every YieldEvery (the policy), as the hand-off spaces them,
		// or Go would crawl beside a contender that polls all the time.
		e.yieldUntil = time.Now().Add(l.cfg.policy.Yield)
		l.yieldToReference()
		return stickyNo
	}
	e.keep(l, r, false)
	e.synced = synced
	hook.Fire(hook.LockStickyKept, l.lockPath)
	return stickyKept
}

// handedOn notes a caller's release whose record went to a seated waiter
// (handoff.go): it is a release like any other for the re-lock test (a
// Lock of this process within the idle time of it is a re-lock,
// resumeSticky), so a process that locks again at once after handing the
// lock on keeps it at its next release if nobody waits then. Before,
// only a release that could keep (stick) counted: a process whose
// releases were hand-offs counted as one that does not re-lock, and its
// first release that found no waiter seated was the reference one, a
// tombstone under the claim, which sent the other processes' next
// attempts through the claim and the reference wait (two processes
// updating one file on tmpfs waited up to 160 ms at a time; bench -procs 2).
func (l *locker) handedOn() {
	if !l.stickyOn() {
		return
	}
	e := l.stickyFor(true)
	if e == nil {
		return
	}
	e.mu.Lock()
	if e.r == nil {
		e.releasedAt, e.stickyIdle = time.Now(), l.cfg.policy.StickyIdle
	}
	e.mu.Unlock()
}

// claimAttested reports whether the claim directory is a Go taker's: its
// kernel lock on the sidecar is visible (SPEC §4.8.4), read through the
// shared look descriptor. Such a taker is a Go process attempting (its
// look found F.lock free a moment ago, and seats itself behind us if it
// finds our record), not a reference contender polling through the claim:
// the release is still the reference one (§4.8.3), but a yield for it
// would hold every Go taker, that one too, off the tombstone for the whole
// window with nobody to take it (two processes updating one file on tmpfs
// stood still 120 ms at a time). A claim without that lock (a TypeScript
// taker's, or any where OFD locks are not seen) gets the yield as before.
func (l *locker) claimAttested() bool {
	fd, done := l.lookProbe(l.sidecar)
	if fd < 0 {
		return false
	}
	defer done()
	held, known := ofdHeldFd(fd)
	return held && known
}

// keep stores r as kept under l (e.mu held) and makes sure a watcher runs.
func (e *stickyEntry) keep(l *locker, r *heldRecord, retry bool) {
	l.extra.Add(1)
	e.l, e.r, e.retry = l, r, retry
	if !e.watching {
		// A kick meant for an earlier watcher (ReleaseKept kicks until
		// it sees the watcher gone, so one may be left in the channel)
		// must not end this one's lingering at once.
		select {
		case <-e.kick:
		default:
		}
		e.watching, e.remap = true, false
		go e.watch(l.stickyKey(), l.cfg.policy)
	} else if retry || (e.ring == nil && l.mailboxSeen) {
		// The running watcher may be lingering (linger.go) for the rest
		// of an idle time: a record kept behind a busy claim is due for
		// release now, and a mailbox it has not mapped must be mapped.
		e.lookForMailbox()
	}
}

// keepBusy keeps r after a release whose one claim attempt found the claim
// busy: the caller is not blocked on it (it may have been stranded by a
// dead TypeScript process); the watcher tries again.
func (l *locker) keepBusy(r *heldRecord) bool {
	e := l.stickyFor(true)
	if e == nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.r != nil {
		return false
	}
	e.keep(l, r, true)
	return true
}

// watch lets the kept record go when its idle time is up or a waiter is
// seated, and tries a refused release again. It ends when nothing is kept.
// pol is the policy of the locker that started it.
func (e *stickyEntry) watch(key mailboxKey, pol *wake.Policy) {
	var (
		mb   *wake.Mailbox
		done func()
		bo   = wake.Backoff{Min: pol.ClaimRetryMin, Max: wake.BackoffMax}
	)
	defer func() {
		if done != nil {
			done()
		}
	}()
	for {
		e.mu.Lock()
		if e.r == nil && e.linger(&mb, &done) {
			continue
		}
		if e.r == nil {
			e.watching, e.ring = false, nil
			e.mu.Unlock()
			return
		}
		if mb == nil && done == nil {
			// The mailbox is where a waiter of another process seats; it is
			// mapped once per watch (nil: none yet, the idle time bounds
			// how long a first waiter, which creates it, waits).
			mb, done = e.l.mailbox(false)
			if mb == nil {
				done = func() {}
			}
			e.ring = mb
		}
		var bell uint32
		if mb != nil {
			bell = mb.Bell()
		}
		left := e.stickyIdle - time.Since(e.releasedAt)
		if !e.retry && left > 0 && (mb == nil || mb.Waiting() == 0) {
			e.mu.Unlock()
			if mb != nil {
				mb.BellWait(bell, left)
			} else {
				t := time.NewTimer(left)
				select {
				case <-t.C:
				case <-e.kick:
					t.Stop()
				}
			}
			continue
		}
		if e.letGo(true) {
			// The claim is busy (a reference contender's attempt, or a
			// claim its dead taker stranded until Go heals it): ownership
			// stays with us, and we try again. We still own F.lock, so
			// nothing else was kept meanwhile.
			time.Sleep(bo.Step(time.Hour))
			continue
		}
		bo.Reset()
	}
}

// letGo lets the kept record go, the one sequence the watcher and
// ReleaseKept share: it takes the record off e (e.mu held, e.r set; letGo
// unlocks e.mu), hands it to the oldest seated Go waiter or else releases
// it the reference way, gives back the locker's reference (l.extra) and
// ends the let-go (letGone), so that a Lock of this process waiting on it
// goes on. once: a single attempt at the claim (the watcher's); when it is
// busy the record is kept again, due for release, the locker's reference
// stays with it, and letGo reports true. Without once the release waits
// for the claim as an Unlock does.
func (e *stickyEntry) letGo(once bool) (busy bool) {
	l, r, ch := e.takeKept()
	e.mu.Unlock()
	hook.Fire(hook.LockStickyLetGo, l.lockPath)
	if handed, _, err := l.handoff(r, nil); handed {
		if r.f != nil {
			r.f.Close()
		}
		if err != nil {
			stickyReport(fmt.Sprintf("exactfs: handing on the lock %s this process kept: %v", l.lockPath, err))
		}
	} else if _, kept, err := l.releaseReference(context.Background(), r, true, once); kept {
		e.letGone(ch, l, r)
		return true
	} else if err != nil {
		stickyReport(fmt.Sprintf("exactfs: releasing the lock %s this process kept failed: %v", l.lockPath, err))
	}
	l.close()
	e.letGone(ch, nil, nil)
	return false
}

// takeKept takes the kept record off e to let it go (e.mu held); until
// letGone(ch, ...) a Lock of this process waits instead of finding it held.
func (e *stickyEntry) takeKept() (l *locker, r *heldRecord, ch chan struct{}) {
	l, r = e.l, e.r
	e.l, e.r, e.synced = nil, nil, nil
	ch = make(chan struct{})
	e.letting = ch
	return l, r, ch
}

// letGone ends the let-go that takeKept began. A non-nil r was not let go
// (its claim was busy): it is kept again, due for release.
func (e *stickyEntry) letGone(ch chan struct{}, l *locker, r *heldRecord) {
	e.mu.Lock()
	if r != nil {
		e.l, e.r, e.retry = l, r, true
	}
	if e.letting == ch {
		e.letting = nil
	}
	e.mu.Unlock()
	close(ch)
}

// yieldToReference asks the Go takers of other processes to stay off the
// tombstone for the policy's Yield (a reference contender polls), through the
// mailbox's yield that the hand-off asks too (handoff.go), unless one was
// asked within its YieldEvery. Without a mailbox there are no Go
// waiters of other processes to hold back.
func (l *locker) yieldToReference() {
	mb, done := l.mailbox(false)
	if mb == nil {
		return
	}
	defer done()
	if wake.Now()-mb.LastYield() > int64(l.cfg.policy.YieldEvery) {
		mb.Yield(wake.Now() + int64(l.cfg.policy.Yield))
	}
}

// stickyYielding reports whether this process holds its own takers off the
// tombstone (stick saw a claim directory).
func (l *locker) stickyYielding() bool {
	if !l.stickyOn() {
		return false
	}
	e := l.stickyFor(false)
	if e == nil {
		return false
	}
	e.mu.Lock()
	on := time.Now().Before(e.yieldUntil)
	e.mu.Unlock()
	if on && l.referenceHolds() {
		e.mu.Lock()
		e.yieldUntil = time.Time{}
		e.mu.Unlock()
	}
	return on
}

// ReleaseKept releases every lock this process keeps between its calls
// (a process that locks again within 2 ms of a release keeps the lock
// for at most that long, see the package documentation) and returns when
// they are released or handed on. A program about to exit calls it, so
// that it leaves tombstones behind instead of the records of a dead
// process: those are reclaimed by the next taker at once, exactfs or
// TypeScript, but the TypeScript reference judges an exited process by
// its pid, which stays alive to it until the parent reaps the process.
// Locks held by a caller (not yet unlocked) are not touched. A program
// that removes a lock's directory after its last Unlock calls it first:
// until then, a kept lock is released in the background, into that
// directory.
func ReleaseKept() {
	stickies.Lock()
	entries := make([]*stickyEntry, 0, len(stickies.m))
	for _, e := range stickies.m {
		entries = append(entries, e)
	}
	stickies.Unlock()
	for _, e := range entries {
		e.mu.Lock()
		if e.r == nil {
			e.mu.Unlock()
			continue
		}
		e.letGo(false)
	}
	// A watcher may be in the middle of a release it took over: wait for
	// it (it ends as soon as nothing is kept).
	for deadline := time.Now().Add(2 * DefaultWait); time.Now().Before(deadline); {
		busy := false
		for _, e := range entries {
			e.mu.Lock()
			busy = busy || e.watching
			if e.watching {
				e.remap = false // this kick ends the watcher
				select {
				case e.kick <- struct{}{}:
				default:
				}
				if e.ring != nil {
					e.ring.Ring()
				}
			}
			e.mu.Unlock()
		}
		if !busy {
			forgetIdleStickies()
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// forgetIdleStickies drops the entries that keep nothing, and the
// sidecars seen (handoff.go): what they remember (when this process last
// released, whether it re-locks, a sidecar's last mtime) is keyed by the
// directory's inode, and a directory removed and made again may get the
// same one, its sidecar too. After ReleaseKept, the next release of any
// lock is a first one again.
func forgetIdleStickies() {
	stickies.Lock()
	for k, e := range stickies.m {
		e.mu.Lock()
		if e.idle() {
			delete(stickies.m, k)
		}
		e.mu.Unlock()
	}
	stickies.Unlock()
	sidecarSeen.Lock()
	clear(sidecarSeen.m)
	sidecarSeen.Unlock()
}

// letGoKept is ReleaseKept, for tests: their temporary directories are
// removed when they end (a kept record would be released into a removed
// directory), and some read F.lock right after a release.
func letGoKept() { ReleaseKept() }
