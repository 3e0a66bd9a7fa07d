package statelock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/liveness"
	"github.com/exactfs/exactfs/statelock/internal/wake"
)

// The direct hand-off (SPEC §4.8.2, claim-less: protocol-perf option 1b).
//
// A Go waiter that finds a live Go cohort owner in F.lock (a record with
// "ofd_slot" whose slot lock the kernel shows held) opens F.lock
// read-write, takes its own slot lock on that inode, and publishes the
// exact record it wants written there (a fresh token, its own slot) in a
// seat of the mailbox (internal/wake), WAITING. The owner, at its release
// (Unlock, or Update's early release after the rename and before the
// directory fsync), serves the oldest seated waiter without the
// transition claim, in the order the protocol model checks
// (internal/model steps.go gRel, gCheck, gPwrite, gGranted):
//
//  1. CAS the seat WAITING -> GRANTING and copy its bytes (wake.Grant);
//  2. check that the slot those bytes name is held on F.lock's inode,
//     through our descriptor (b): the waiter is alive and its kernel
//     lock will attest the record the moment it is visible; otherwise
//     cancel (GRANTING -> WAITING) and try the next waiter;
//  3. one pwrite of the bytes over ours, padded with spaces to the
//     current size, no ftruncate (c): F.lock goes from our live record to
//     the waiter's, never through a tombstone, so no reference process
//     ever finds one to take;
//  4. F.lock must still name this inode (d); a peer's exact unlink may
//     detach it for a moment and put it back, so an absent name is looked
//     at again, never taken as a loss;
//  5. drop our slot lock, GRANTED, futex wake.
//
// The waiter enters when it reads exactly its bytes (plus spaces) through
// its own descriptor and the name still names that inode; its slot lock,
// taken before it was seated, already attests the record. Why the
// reference stays safe, and what each crash leaves, is protocol-perf
// §4.1b: nobody else writes a live record, there is never a tombstone in
// between, a torn read is malformed, contention, or refused by the
// re-capture and the exact unlink. A granter killed before its pwrite
// leaves its own record with its slot free (dead at once); after it, the
// waiter's record with the waiter's slot held (it owns, and finds its
// bytes at its next look even if no wake comes). A waiter seated in
// GRANTING whose granter died goes back to WAITING (wake.Seat.Recover).
//
// With no Go waiter to serve, a process that re-locks keeps the lock for
// a moment (sticky.go); otherwise the release is the reference one (the
// tombstone under the claim), and the oldest seated waiter is nudged so
// that it attempts at once.
//
// The cohort is off (waiters wait the reference way, owners never grant)
// where there are no OFD locks or no kernel slot (§4.8.1), where the
// mailbox cannot be created or fails the trust rule (owner, links, mode,
// size) or the local-filesystem test (wake.Open), where our record does
// not fit in a seat, and for TryLock (one attempt, no waiting).

// handoffNamePatience bounds how long a granter, and a granted waiter,
// keep looking for F.lock's name when a peer's exact unlink detached it
// (§4.8.2d): the reference puts the inode back within a few system calls.
const handoffNamePatience = time.Second

// cohort reports whether this call may take part in hand-offs. The
// switch is the waiting policy's (wake.Policy.Handoff: off, no waiter is
// seated and no release grants, the reference path, as before; tests turn
// it off to show what the hand-off's guards are for).
func (l *locker) cohort() bool {
	return l.cfg.policy.Handoff && ofdSupported && !l.cfg.noSlots && slotOf(l.self.PidfdIno) != 0
}

// mailboxes are the mailboxes this process has mapped, by the lock
// directory and the lock's name. A user holds a reference for as long as
// it uses the mapping (a seated wait, one hand-off, one nudge); one that
// nobody has used for MailboxIdle is unmapped and closed, so that a
// process that stopped locking keeps no descriptor on the filesystem (it
// could not be unmounted), as parked records are closed (park.go). A
// mailbox whose name came to name another file is replaced, the old one
// closed when its last user is done. At most mailboxMax are mapped at once:
// beyond that the cohort is off for further locks until some are closed.
//
// The name is looked at again (an lstat) when a mapping is used more than
// mailboxRecheck after its last look, not at every use: a busy lock uses
// its mailbox twice a cycle (the granter, the next waiter), and those two
// lstats were a twentieth of a contended cycle's system calls. The look
// proves nothing a grant relies on: a grant is proved by F.lock's bytes
// and the waiter's slot lock (SPEC §4.8.2), and the mapping is of a file
// wake.Open proved ours, which no other uid can write. What a stale
// mapping can cost is liveness only: after someone removes the mailbox and
// another process makes a new one, this process seats its waiters in (or
// serves) the old one for at most mailboxRecheck, while the others' seated
// waiters see F.lock change at their next poll and attempt.
var mailboxes struct {
	sync.Mutex
	m map[mailboxKey]*mailboxEntry
	n int
}

type mailboxKey struct {
	dev, ino uint64
	name     string
}

type mailboxEntry struct {
	key     mailboxKey
	mb      *wake.Mailbox
	refs    int
	stale   bool // replaced in the map: closed when refs reaches 0
	timer   *time.Timer
	checked time.Time // when the name was last seen to name mb
}

const (
	mailboxMax     = 64
	mailboxRecheck = 20 * time.Millisecond
)

// mailbox returns the mapped mailbox of this lock, opening (and, when
// create is set, creating) it, and the function that gives it back; nil
// when there is none to use.
func (l *locker) mailbox(create bool) (*wake.Mailbox, func()) {
	name, ok := wake.Name(l.lockName)
	if !ok {
		return nil, nil
	}
	dev, ino := l.dir.Inode()
	key := mailboxKey{dev, ino, l.lockName}
	mailboxes.Lock()
	if e := mailboxes.m[key]; e != nil && time.Since(e.checked) < mailboxRecheck {
		defer mailboxes.Unlock()
		return e.mb, e.take(l.cfg.policy.MailboxIdle)
	}
	mailboxes.Unlock()
	fi, err := l.dir.Lstat(name)
	if err != nil && (!create || !l.ownsDir()) {
		// Not made in a directory that is not ours (root's one-off in a
		// service's directory): a mailbox there would be ours, and the
		// trust rule (wake.Open) keeps every process of the directory's
		// owner off it, for good. We wait the reference way instead.
		return nil, nil
	}
	mailboxes.Lock()
	defer mailboxes.Unlock()
	if e := mailboxes.m[key]; e != nil {
		// fi is nil when the name is gone (err set): the mapped entry is
		// then stale, as it is when the name is another inode now.
		if err == nil {
			if id, ok := fi.Sys().(exactfs.Identity); ok && id.Dev == e.mb.Dev && id.Ino == e.mb.Ino {
				e.checked = time.Now()
				return e.mb, e.take(l.cfg.policy.MailboxIdle)
			}
		}
		e.stale = true
		delete(mailboxes.m, key)
		if e.refs == 0 {
			e.close()
		}
	}
	if mailboxes.n >= mailboxMax {
		return nil, nil
	}
	mb, err := wake.Open(l.dir, l.lockName, create)
	if err != nil {
		return nil, nil
	}
	if mailboxes.m == nil {
		mailboxes.m = map[mailboxKey]*mailboxEntry{}
	}
	e := &mailboxEntry{key: key, mb: mb, checked: time.Now()}
	mailboxes.m[key] = e
	mailboxes.n++
	return mb, e.take(l.cfg.policy.MailboxIdle)
}

// ownsDir reports whether the lock's directory is owned by our euid.
func (l *locker) ownsDir() bool {
	st, err := l.dir.StatRaw()
	return err == nil && l.euid >= 0 && st.Uid == uint32(l.euid)
}

// take counts a user (mailboxes locked) and returns its give-back. idle
// is the user's policy's MailboxIdle: the last user's give-back arms the
// timer that unmaps the mailbox, with its own.
func (e *mailboxEntry) take(idle time.Duration) func() {
	e.refs++
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	var once sync.Once
	return func() { once.Do(func() { e.give(idle) }) }
}

func (e *mailboxEntry) give(idle time.Duration) {
	mailboxes.Lock()
	defer mailboxes.Unlock()
	e.refs--
	switch {
	case e.refs > 0:
	case e.stale:
		e.close()
	default:
		e.timer = time.AfterFunc(idle, e.expire)
	}
}

func (e *mailboxEntry) expire() {
	mailboxes.Lock()
	defer mailboxes.Unlock()
	if e.refs == 0 && !e.stale && mailboxes.m[e.key] == e {
		delete(mailboxes.m, e.key)
		e.close()
	}
}

// close unmaps (mailboxes locked, nobody using it), and forgets the
// lock's sidecar look (referencePolling).
func (e *mailboxEntry) close() {
	e.mb.Close()
	mailboxes.n--
	sidecarSeen.Lock()
	delete(sidecarSeen.m, e.key)
	sidecarSeen.Unlock()
}

// handoff is the owner's side: it hands F.lock to the oldest seated Go
// waiter, or reports false (nothing written: release the reference way).
// yielded: it did not try, because a reference contender is polling and
// Go takers are now held off the tombstone for its turn; that release must
// leave the tombstone (never keep F.lock, sticky.go), or the yield gives
// the reference contender nothing (the model's BugYieldThenKeep).
// promise, when not nil, is filled when the grant promises the caller's
// directory fsync (readsync.go).
// On true our record is gone from F.lock and our slot lock dropped; the
// caller closes or parks r.f (nil when the slot unlock failed: it was
// closed here). err: the hand-off was made, but F.lock names another
// inode for good, so what we handed over was not the lock (someone
// replaced our record while we held it): reported as the reference
// release reports it.
func (l *locker) handoff(r *heldRecord, promise *granterPromise) (handed, yielded bool, err error) {
	if !l.cohort() || r.rec == nil || r.rec.OfdSlot == 0 {
		return false, false, nil
	}
	mb, done := l.mailbox(false)
	l.mailboxSeen = mb != nil
	if mb == nil {
		return false, false, nil
	}
	defer func() {
		if done != nil {
			done()
		}
	}()
	if mb.Waiting() > 0 && wake.Now()-mb.LastYield() > int64(l.cfg.policy.YieldEvery) && l.referencePolling() {
		// A reference contender is polling: hand-offs would pass F.lock
		// from Go owner to Go owner for as long as Go waiters queue and
		// it would never see a tombstone. Release the reference way and
		// hold Go takers of the tombstone back for one of its backoff
		// steps (SPEC §4.8.3 asks the same of sticky ownership).
		mb.Yield(wake.Now() + int64(l.cfg.policy.Yield))
		return false, true, nil
	}
	var refused [wake.Seats]bool
	for {
		g := mb.Grant(func(i int) bool { return refused[i] })
		if g == nil {
			return false, false, nil
		}
		hook.Fire(hook.LockHandoffCheck, l.lockPath)
		w, err := ParseRecord(g.Record())
		ok := err == nil && !w.Released && validSlot(w.OfdSlot) && w.BootID == l.self.BootID && l.host.IsLocal(w.Host())
		if ok {
			held, known := slotHeld(r.f.Fd(), w.OfdSlot)
			ok = held && known
		}
		if !ok {
			// (b) The waiter's slot lock is not on our inode (it died, or
			// it queued on an inode F.lock no longer names): never write
			// its bytes, which would then be a record nobody attests.
			g.Cancel()
			refused[g.Seat()] = true
			continue
		}
		hook.Fire(hook.LockHandoffBeforePwrite, l.lockPath)
		if err := writeGrowing(r.f, l.lockPath, padTo(g.Record(), int64(len(r.data))), int64(len(r.data))); err != nil {
			// Nothing or part of it landed: our bytes go back (we still
			// own F.lock), and the release goes the reference way.
			writeAll(r.f, l.lockPath, r.data, -1)
			g.Cancel()
			return false, false, nil
		}
		hook.Fire(hook.LockHandoffAfterPwrite, l.lockPath)
		named := l.namesAgain(r.id)
		if slotUnlock(r.f, r.rec.OfdSlot) != nil {
			// Our slot lock may still be on the inode, attesting the
			// waiter's record (it carries the waiter's slot, not ours) and
			// nothing else, but it must not outlive our ownership in a
			// parked descriptor: closing drops every lock the descriptor
			// holds, for certain. The caller parks nothing (r.f is nil).
			r.f.Close()
			r.f = nil
		}
		if promise != nil {
			// Our directory fsync comes after this release (an Update
			// released early): the grant promises it, and the mailbox
			// stays mapped for us until we mark it done (keepPromise).
			promise.tag, promise.mb, promise.done = g.Promise(), mb, done
			promise.seq = g.Seq()
			done = nil
		} else {
			g.NoPromise()
		}
		g.Done()
		if !named {
			return true, false, fmt.Errorf("%w after the hand-off: %s names another record, or none", errRecordChanged, l.lockPath)
		}
		return true, false, nil
	}
}

// namesAgain is §4.8.2d: after the hand-off's pwrite, F.lock must still
// name our inode. A reference exact unlink detaches the name to its
// quarantine name and puts it back when the bytes are not the ones it
// judged (they are not: they changed under it), so an absent name is
// looked at again for up to handoffNamePatience. It reports whether the
// name came back; either way the waiter's bytes are what our inode holds
// and the waiter decides by the name itself.
func (l *locker) namesAgain(id exactfs.Identity) bool {
	deadline := time.Now().Add(handoffNamePatience)
	for {
		fi, err := l.dir.Lstat(l.lockName)
		if err == nil {
			if at, ok := fi.Sys().(exactfs.Identity); ok && at.SameInode(id) {
				return true
			}
			return false // another inode: ours was removed for good
		}
		if !errors.Is(err, fs.ErrNotExist) || time.Now().After(deadline) {
			return false
		}
		hook.Fire(hook.LockHandoffNameLost, l.lockPath)
		time.Sleep(50 * time.Microsecond)
	}
}

// nudge wakes the oldest seated waiter after a reference release, so that
// it attempts at once instead of at its next poll (not while Go yields to
// a reference contender).
func (l *locker) nudge() {
	if !l.cohort() {
		return
	}
	if mb, done := l.mailbox(false); mb != nil {
		if !mb.Yielding(wake.Now()) {
			mb.Nudge()
		}
		done()
	}
}

// The fairness towards reference contenders (TypeScript peers, older
// exactfs on the reference path) is wait policy: wake.Policy's
// ReferenceRecent, Yield and YieldEvery say when one is polling and how
// long, and how often, Go takers stay off a tombstone for it.

// sidecarSeen is the sidecar as this process last saw it at a release,
// per lock: its inode and mtime. An entry lives no longer than the
// lock's mailbox mapping (mailboxEntry.close forgets it).
var sidecarSeen struct {
	sync.Mutex
	m map[mailboxKey]sidecarLook
}

type sidecarLook struct {
	dev, ino uint64
	mtime    time.Time
}

// referencePolling reports whether the sidecar was written since this
// process last looked at a release, within the policy's ReferenceRecent (one lstat).
// The first look only remembers: a Go process writes the sidecar too, on
// a lock's very first take and when it heals a crashed claim, once; a
// reference poller writes it at every attempt.
//
// A first look is also one at another sidecar inode, or after the lock's
// mailbox mapping closed (an entry lives no longer than it): the key is
// the lock directory's inode number and the lock's name, and a directory
// removed and made again (a test's temporary directory, a tool's scratch
// directory) can come back with its old number and its sidecar's (ext4
// hands freed inodes back in order). An old entry would then read as a
// sidecar rewritten since: a yield to a reference contender that does not
// exist, and a hand-off not made. While the old mapping lives, the new
// directory's mailbox is another inode, so mailbox() finds the mapping
// stale and closes it; once it has closed, the entry is gone.
func (l *locker) referencePolling() bool {
	fi, err := l.dir.Lstat(l.sidecar)
	if err != nil {
		return false
	}
	id, _ := fi.Sys().(exactfs.Identity)
	dev, ino := l.dir.Inode()
	key := mailboxKey{dev, ino, l.lockName}
	now := sidecarLook{dev: id.Dev, ino: id.Ino, mtime: fi.ModTime()}
	sidecarSeen.Lock()
	defer sidecarSeen.Unlock()
	if sidecarSeen.m == nil {
		sidecarSeen.m = map[mailboxKey]sidecarLook{}
	}
	prev, seen := sidecarSeen.m[key]
	if !seen && len(sidecarSeen.m) >= 4*mailboxMax {
		clear(sidecarSeen.m)
	}
	sidecarSeen.m[key] = now
	seen = seen && prev.dev == now.dev && prev.ino == now.ino
	return seen && !now.mtime.Equal(prev.mtime) && time.Since(now.mtime) < l.cfg.policy.ReferenceRecent
}

// yielding reports whether this lock's mailbox, if this process has it
// mapped, asks Go takers to stay off the tombstone now. The yield ends as
// soon as a reference holder's record is in F.lock (it had its turn): the
// one read this costs is paid only while a yield is on.
func (l *locker) yielding() bool {
	if !l.cohort() {
		return false
	}
	dev, ino := l.dir.Inode()
	key := mailboxKey{dev, ino, l.lockName}
	// The mapping is read under the registry's lock, without taking a
	// reference (that would re-arm the idle timer on every attempt): once
	// the lock is let go, an entry nobody holds a reference to may be
	// unmapped by its idle timer at any moment, and a read of it then
	// kills the process (SIGSEGV; the chaos soak at scale 3 found it).
	mailboxes.Lock()
	e := mailboxes.m[key]
	on := e != nil && e.mb.Yielding(wake.Now())
	mailboxes.Unlock()
	hook.Fire(hook.LockYieldLook, l.lockPath)
	if !on {
		return false
	}
	if l.referenceHolds() {
		mailboxes.Lock()
		if e := mailboxes.m[key]; e != nil {
			e.mb.EndYield()
		}
		mailboxes.Unlock()
	}
	return true
}

// referenceHolds reports whether F.lock holds a live record without a
// kernel slot (a TypeScript peer's, or an older exactfs's), read through
// the shared look descriptor.
func (l *locker) referenceHolds() bool {
	fd, done := l.lookProbe(l.lockName)
	if fd < 0 {
		return false
	}
	defer done()
	buf := make([]byte, exactfs.RecordCap)
	n, err := fd.Pread(buf, 0)
	if err != nil || n <= 0 || n == len(buf) {
		return false
	}
	r, err := ParseRecord(buf[:n])
	return err == nil && !r.Released && r.OfdSlot == 0
}

// handoffOutcome is how a seated wait ended.
type handoffOutcome int

const (
	notSeated handoffOutcome = iota // not a Go cohort holder, or no mailbox: wait the reference way
	withdrew                        // the holder went (or the wait is over): attempt at once
	granted                         // F.lock is ours
)

// seatedWait is the waiter's side: seated behind a live Go cohort owner,
// it sleeps on its seat until F.lock holds its bytes (granted), the holder
// is gone or F.lock names another inode (withdrew), or deadline passes or
// ctx ends (withdrew; a grant that lands meanwhile is taken, and the
// caller releases it). vouched: the kernel showed a slot lock on F.lock's
// inode a moment ago (look), the inode at, so slotLocked need not ask
// again.
func (a *acquisition) seatedWait(deadline time.Time, vouched bool, at [2]uint64) (*heldRecord, handoffOutcome) {
	l := a.l
	if !l.cohort() || a.once {
		return nil, notSeated
	}
	if !vouched {
		var ok bool
		if ok, at = l.slotLocked(); !ok {
			return nil, notSeated
		}
	}
	// The descriptor this process parked when it last handed F.lock on
	// (release), if it is on the inode the name named a moment ago (the
	// look that vouched for a slot lock: no lstat of its own): every
	// proof below is made through it exactly as through a fresh open, and
	// the one that matters here, that the name names the inode we read
	// (stillNames, after the read), is made either way.
	var err error
	f := l.takeParkedAt(at)
	if f == nil {
		if f, err = l.dir.OpenFile(l.lockName, os.O_RDWR, 0); err != nil {
			return nil, notSeated
		}
	}
	why, st := l.distrustFile(f)
	if why != "" {
		f.Close()
		return nil, notSeated
	}
	var data []byte
	var id exactfs.Identity
	if st.Ino != 0 {
		data, id, err = readHeldAfter(f, st) // the trust check's fstat
	} else {
		data, id, err = readHeld(f)
	}
	if err != nil {
		f.Close()
		return nil, notSeated
	}
	holder, ok := l.cohortHolderRecord(f, data)
	if !ok || l.stillNames(l.lockName, id) != nil {
		f.Close()
		return nil, notSeated
	}
	me := l.lockOwner()
	b := me.Encode()
	if me.OfdSlot == 0 || len(b) > wake.MaxRecord || slotLock(f.Fd(), me.OfdSlot) != nil {
		f.Close()
		return nil, notSeated
	}
	mb, done := l.mailbox(true)
	if mb == nil {
		f.Close()
		return nil, notSeated
	}
	defer done()
	if a.arrived == 0 {
		a.arrived = max(1, wake.Now())
	}
	seat, err := mb.Take(b, a.arrived)
	if err != nil {
		f.Close()
		return nil, notSeated
	}
	// A sticky owner (sticky.go) sleeps on the bell while it keeps F.lock
	// for its process: it hands over at once instead of at its idle time.
	mb.Ring()
	hook.Fire(hook.LockHandoffSeated, l.lockPath)
	stop := context.AfterFunc(a.ctx, seat.Interrupt)
	defer stop()
	giveUp := false
	// The poll grows from the policy's SeatPoll to wake.BackoffMax while F.lock stays as
	// it was: a grant wakes us through the futex, so the poll only bounds
	// how late a holder's death (no event) or a release without a nudge
	// (an older exactfs, a TypeScript reclaim) is seen.
	poll, prev := a.l.cfg.policy.SeatPoll, []byte(nil)
	// first: the look right after taking the seat. It is there for a
	// holder that released the reference way (or died) between the look
	// above and our WAITING, when nobody would wake us: while the holder
	// judged above still holds its slot lock on this inode, it has not
	// released yet, and its release will grant, nudge or ring after our
	// WAITING, so one query of its slot is the whole look. Otherwise the
	// full look below runs. It decides no ownership, only whether to sleep.
	first := true
	// After a wake with no grant, the waiter also watches for the exit of
	// the holder it waits behind (wake.WatchExit: a hint, no system call
	// until the holder dies): its death makes no other event, and the
	// poll grows to wake.BackoffMax while F.lock stays as it was. Not
	// before the first sleep: a waiter served in turn, as in a busy loop,
	// pays nothing for it.
	var (
		watchedIno uint64
		stopWatch  = func() {}
	)
	defer func() { stopWatch() }()
	watchHolder := func(got []byte, err error) {
		r, perr := ParseRecord(got)
		if err != nil || perr != nil || r.Released || r.PidfdIno == 0 || r.PidfdIno == watchedIno {
			return
		}
		stopWatch()
		watchedIno = r.PidfdIno
		var ok bool
		stopWatch, ok = wake.WatchExit(r.Pid, r.PidfdIno, func() {
			hook.Fire(hook.LockSeatHolderExited, l.lockPath)
			seat.Interrupt()
		})
		if ok {
			hook.Fire(hook.LockSeatExitWatched, l.lockPath)
		}
	}
	for {
		// The state is read before F.lock: GRANTED is stored after the
		// granter's pwrite returned, so a read that follows it sees the
		// grant's bytes and identity whole (one read: no fstat of it can
		// come before the pwrite and its pread after).
		st := seat.State()
		if first {
			first = false
			if st == wake.Waiting {
				if held, known := slotHeld(f.Fd(), holder.OfdSlot); held && known {
					seat.Sleep(max(time.Millisecond, min(poll, time.Until(deadline))))
					poll = min(2*poll, wake.BackoffMax)
					continue
				}
			}
		}
		got, gid, err := readHeld(f)
		if err == nil && ours(got, b) && st != wake.Granted {
			// Our bytes, but the granter may be inside its pwrite (the
			// fstat could precede its mtime update): read until two reads
			// agree, so that the identity we keep is the one our release
			// will prove.
			got, gid, err = l.readSettled(f)
		}
		if err == nil && !bytes.Equal(got, prev) {
			poll, prev = a.l.cfg.policy.SeatPoll, got
		}
		if err == nil && ours(got, b) {
			if l.namedPatiently(gid) {
				hook.Fire(hook.LockHandoffAccepted, l.lockPath)
				l.granted = syncPromise{tag: seat.Promised(), mb: mb}
				seat.Leave()
				return &heldRecord{name: l.lockName, f: f, id: gid, data: got, rec: me}, granted
			}
			// Our bytes on an inode the name no longer names: nobody's lock.
			giveUp = true
		}
		switch seat.State() {
		case wake.Granting:
			seat.Recover() // back to WAITING only if the granter is gone
		case wake.Granted:
			if !(err == nil && ours(got, b)) {
				// The granter wrote our bytes and F.lock no longer holds
				// them (a granted record replaced: nobody's now).
				if st == wake.Granted {
					giveUp = true
				}
				// Else GRANTED landed after our read: look again at once.
			}
		case wake.Waiting:
			if err != nil || !l.cohortHolder(f, got) || l.stillNames(l.lockName, gid) != nil {
				// The holder we read may just have handed F.lock to
				// another waiter (and dropped its slot): read once more
				// before giving up our place.
				got, gid, err = readHeld(f)
				if err == nil && ours(got, b) {
					continue
				}
				if err != nil || !l.cohortHolder(f, got) || l.stillNames(l.lockName, gid) != nil {
					giveUp = true
				}
			}
		}
		if !giveUp && (time.Now().After(deadline) || a.ctx.Err() != nil) {
			giveUp = true
		}
		if giveUp {
			if seat.State() == wake.Granted || seat.Withdraw() {
				// The withdrawal is final; a grant that landed before it
				// (a granter that died after its pwrite, whose seat we
				// put back to WAITING) is in F.lock now: look once more.
				if got, gid, err := l.readSettled(f); err == nil && ours(got, b) && l.namedPatiently(gid) {
					l.granted = syncPromise{tag: seat.Promised(), mb: mb}
					seat.Leave()
					return &heldRecord{name: l.lockName, f: f, id: gid, data: got, rec: me}, granted
				}
				seat.Leave()
				f.Close()
				return nil, withdrew
			}
			// GRANTING: a granter is at work; its outcome comes soon (or
			// its death, which Recover sees).
		}
		if !giveUp {
			watchHolder(got, err)
			seat.Sleep(max(time.Millisecond, min(poll, time.Until(deadline))))
		} else {
			seat.Sleep(poll)
		}
		poll = min(2*poll, wake.BackoffMax)
	}
}

// slotLocked is the cheap test before a waiter opens F.lock to seat
// itself: some kernel slot lock is held on the inode F.lock names (asked
// through the process's shared look descriptor, which opens and closes
// nothing, so no other waiter's watch is woken). A TypeScript holder
// holds none, and its waiters never open F.lock read-write for nothing.
// at is the inode it asked about.
func (l *locker) slotLocked() (ok bool, at [2]uint64) {
	fd, at, done := l.lookProbeAt(l.lockName)
	if fd < 0 {
		return false, at
	}
	defer done()
	held, known := anySlotHeld(fd)
	return held && known, at
}

// readSettled reads F.lock through f twice (fstat and pread each) and
// returns what both reads agree on. One read is not enough for the
// identity a holder keeps: its fstat may come before a granter's pwrite
// updates the mtime and its pread after the bytes landed, and a release
// that proves "our bytes, our identity" later would then find the mtime
// moved and report our own record as replaced. A disagreement is
// reported as changed_during_read (the caller looks again).
func (l *locker) readSettled(f *os.File) ([]byte, exactfs.Identity, error) {
	got, gid, err := readHeld(f)
	if err != nil {
		return nil, exactfs.Identity{}, err
	}
	again, aid, err := readHeld(f)
	if err != nil {
		return nil, exactfs.Identity{}, err
	}
	if !bytes.Equal(got, again) || !sameRecord(gid, aid) {
		return nil, exactfs.Identity{}, exactfs.ErrChangedDuringRead
	}
	return again, aid, nil
}

// cohortHolder reports whether data, read through f, is the live record of
// a Go cohort owner: not released, with a kernel slot that the kernel
// shows held on f's inode.
func (l *locker) cohortHolder(f *os.File, data []byte) bool {
	_, ok := l.cohortHolderRecord(f, data)
	return ok
}

// cohortHolderRecord is cohortHolder, with the record it judged.
func (l *locker) cohortHolderRecord(f *os.File, data []byte) (*Record, bool) {
	r, err := ParseRecord(data)
	if err != nil || r.Released || r.OfdSlot == 0 {
		return nil, false
	}
	v, ok := l.kernelVerdict(r, f)
	return r, ok && v.Verdict == liveness.Alive
}

// ours reports whether got is exactly b followed by nothing but spaces
// (the hand-off pads to the size the file had).
func ours(got, b []byte) bool {
	if len(got) < len(b) || !bytes.Equal(got[:len(b)], b) {
		return false
	}
	for _, c := range got[len(b):] {
		if c != ' ' {
			return false
		}
	}
	return true
}

// namedPatiently reports whether F.lock names the inode of id, looking
// again while a peer's exact unlink has the name detached (§4.8.2d).
func (l *locker) namedPatiently(id exactfs.Identity) bool {
	return l.namesAgain(id)
}

// handoffWait seats the acquisition behind a live Go cohort owner when c
// says the lock is held (seatedWait). done: the acquisition is over (err
// nil: h is ours; else the wait's timeout). Otherwise h is nil: a.direct
// says it withdrew (attempt at once), else it was never seated (wait the
// reference way).
func (a *acquisition) handoffWait(c *contention) (h *heldRecord, done bool, err error) {
	if c == nil || c.reason != ReasonOwnerLive || a.once {
		return nil, false, nil
	}
	remaining := a.budget - time.Since(a.start)
	if remaining <= 0 {
		return nil, false, nil
	}
	h, how := a.seatedWait(time.Now().Add(remaining), c.slot && a.attempts == 1, c.at)
	switch how {
	case granted:
		if a.ctx.Err() != nil || time.Since(a.start) > a.budget {
			// The grant landed as the wait ended: it is ours, released
			// the proper way (which may hand it on), and the caller is
			// told the wait's outcome.
			a.l.release(context.Background(), h, true, nil)
			return nil, true, a.fail(timeoutReason(c), c, a.ctx.Err())
		}
		return h, true, nil
	case withdrew:
		a.direct = true
	}
	return nil, false, nil
}
