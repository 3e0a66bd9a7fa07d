package statelock

import (
	"time"

	"github.com/exactfs/exactfs"
)

// Fairness. Waiters queue (queueJoin: a read lock at their ticket on
// F.lock's inode, beyond the holder's range), and the lock has the two
// modes of sync.Mutex:
//   - normal: a new caller that finds no waiter queued for longer than
//     bargeWindow takes the lock at once if it is free, even past younger
//     waiters. Nearly always that is the process that just released it and
//     asks again: it is running, while a waiter must first be woken, so
//     handing over to the waiter would cost a wake-up and a second claim
//     round trip on every update (measured: a quarter of the throughput
//     with 2 to 8 processes);
//   - starvation: once some waiter has waited longer than bargeWindow, new
//     callers queue behind it, and among waiters only the first one in the
//     queue attempts when woken. So no waiter waits much longer than
//     bargeWindow plus one hold per waiter ahead of it.
//
// This is advisory and only orders exactfs processes among themselves;
// mutual exclusion never depends on it (TypeScript peers, and TryLock,
// ignore the queue). A waiter that stays behind a first one that makes no
// progress for queueTrust attempts anyway, so a stopped process cannot
// block the queue.
const queueTrust = time.Second

// bargeWindow is how long a waiter may be overtaken by new callers before
// they queue behind it (see Fairness): about fifty lock cycles of a small
// Update on a local disk.
const bargeWindow = 50 * time.Millisecond

// ticket is one waiter's place in the queue.
type ticket struct {
	fd     int   // read-only descriptor on F.lock's inode, carrying the read lock; -1: none
	n      int64 // arrival order: CLOCK_MONOTONIC nanoseconds, one clock for the host
	ino    uint64
	behind time.Time // since when another waiter has been ahead of us
}

// join puts the caller in the queue on F.lock's current inode, through a
// read-only descriptor of its own (its close, when the caller leaves the
// queue, is what wakes the waiters behind it).
func (l *locker) join(t *ticket) *ticket {
	if !ofdSupported {
		return nil
	}
	if t == nil {
		t = &ticket{fd: -1, n: max(1, ticketNow())}
	}
	p := l.openProbe(l.lockName)
	if p.fd < 0 {
		return t
	}
	if !queueJoin(uintptr(p.fd), t.n) {
		p.close()
		return t
	}
	t.leave()
	t.fd, t.ino = p.fd, p.ino
	return t
}

// first reports whether the waiter may attempt now: nobody is ahead of it,
// or whoever is ahead has been so for longer than queueTrust. It moves the
// ticket to a new inode of F.lock (after a reclaim), keeping its place.
func (l *locker) first(t *ticket) bool {
	if t == nil {
		return true
	}
	if fi, err := l.dir.Lstat(l.lockName); err == nil {
		if id, ok := fi.Sys().(exactfs.Identity); ok && id.Ino != t.ino {
			l.join(t)
		}
	}
	if t.fd < 0 || !queueAheadFd(uintptr(t.fd), t.n) {
		t.behind = time.Time{}
		return true
	}
	if t.behind.IsZero() {
		t.behind = time.Now()
	}
	return time.Since(t.behind) > queueTrust
}

// leave drops the ticket's read lock and then closes its descriptor. The
// explicit unlock matters: the close is what wakes the waiters behind
// (IN_CLOSE_NOWRITE), and the kernel sends that event before it removes the
// closed file's locks, so a waiter woken by a bare close could still find
// this ticket ahead of it and go back to sleep with no event left to wake
// it (see ofdUnlock).
func (t *ticket) leave() {
	if t != nil && t.fd >= 0 {
		queueLeave(uintptr(t.fd), t.n)
		probeFd{fd: t.fd}.close()
		t.fd = -1
	}
}
