package wake

import (
	"sync"
	"time"

	"github.com/exactfs/exactfs/internal/sys"
)

// Queue is the waiting line of exactfs processes that are not seated in a
// mailbox (behind a TypeScript or older exactfs holder, or with the cohort
// off): OFD read locks on single bytes of a record's inode, at Base+ticket
// (ticket: the waiter's arrival, Now). Read locks never conflict with each
// other, and Base lies beyond the holder's range, so a ticket never
// conflicts with the holder either. The kernel drops a waiter's lock when
// it dies, so the queue never holds a ghost. Where the platform has no
// open-file-description locks, internal/sys answers every question with
// ErrUnsupported (or "not known"): nobody joins, nobody is ahead.
//
// Fairness. The lock has the two modes of sync.Mutex:
//   - normal: a new caller that finds no waiter queued for longer than
//     Barge takes the lock at once if it is free, even past younger
//     waiters. Nearly always that is the process that just released it and
//     asks again: it is running, while a waiter must first be woken, so
//     handing over to the waiter would cost a wake-up and a second claim
//     round trip on every update (measured: a quarter of the throughput
//     with 2 to 8 processes);
//   - starvation: once some waiter has waited longer than Barge, new
//     callers queue behind it, and among waiters only the first one in the
//     queue attempts when woken. So no waiter waits much longer than Barge
//     plus one hold per waiter ahead of it.
//
// This is advisory and only orders exactfs processes among themselves;
// mutual exclusion never depends on it (TypeScript peers, and TryLock,
// ignore the queue). A waiter that stays behind a first one that makes no
// progress for Trust attempts anyway, so a stopped process cannot block
// the queue.
//
// The knobs are fields, not package variables, so tests that change them
// run in parallel. The zero Queue is not usable: take NewQueue's.
type Queue struct {
	Base  int64         // where tickets begin in the record's lock space (the caller's protocol decides)
	Trust time.Duration // how long a waiter stays behind one that makes no progress
	Barge time.Duration // how long a waiter may be overtaken by new callers
}

// Defaults of Queue's knobs. Barge is about fifty lock cycles of a small
// Update on a local disk.
const (
	DefaultTrust = time.Second
	DefaultBarge = 50 * time.Millisecond
)

// NewQueue is the queue whose tickets begin at base, with the default knobs.
func NewQueue(base int64) Queue {
	return Queue{Base: base, Trust: DefaultTrust, Barge: DefaultBarge}
}

// Join takes a waiter's place in the queue: a read lock on the one byte of
// its ticket, through fd (open for reading on the record's inode).
func (q *Queue) Join(fd int, ticket int64) bool {
	return sys.OFDReadLock(fd, q.Base+ticket, 1) == nil
}

// Leave drops the read lock Join took through fd.
func (q *Queue) Leave(fd int, ticket int64) {
	sys.OFDUnlock(fd, q.Base+ticket, 1)
}

// Ahead reports whether some waiter with a smaller ticket than ticket is
// queued on the inode fd is open on (ticket < 0: any waiter).
func (q *Queue) Ahead(fd int, ticket int64) bool {
	var length int64 // any waiter: to the end of the lock space
	if ticket >= 0 {
		if ticket == 0 {
			return false
		}
		length = ticket
	}
	held, known := sys.OFDHeld(fd, q.Base, length)
	return known && held
}

// Starving reports whether a waiter has been queued on the inode fd is
// open on for longer than Barge: new callers queue behind it, and a
// release wakes it at once.
func (q *Queue) Starving(fd int) bool {
	return q.Ahead(fd, Now()-int64(q.Barge))
}

// Who holds a kernel lock on a record's inode, as Who tells.
type Who int

const (
	Nobody Who = iota
	Holder     // a lock below Base
	Waiter     // a ticket
)

// Who asks, with one F_OFD_GETLK over the whole lock space, whether anyone
// holds a lock on the inode fd is open on: the holder's range (below Base)
// or a waiter's ticket, and the first byte of the lock the kernel named.
// When both exist the kernel names one of them; either means the caller
// waits.
func (q *Queue) Who(fd int) (who Who, start int64) {
	held, start, err := sys.OFDConflict(fd, 0, 0)
	switch {
	case err != nil, !held:
		return Nobody, 0
	case start < q.Base:
		return Holder, start
	}
	return Waiter, start
}

// Ticket is one waiter's place in a Queue.
type Ticket struct {
	Fd     int    // read-only descriptor on the record's inode, carrying the read lock; -1: none
	N      int64  // arrival order: CLOCK_MONOTONIC nanoseconds, one clock for the host
	Ino    uint64 // the inode Fd is open on
	behind time.Time
}

// NewTicket is a ticket that arrives now, in no queue yet.
func NewTicket() *Ticket { return &Ticket{Fd: -1, N: max(1, Now())} }

// Move puts t in the queue through fd, open for reading on inode ino,
// keeping its arrival: on success t leaves its old place (and closes its
// old descriptor) and owns fd; on failure it stays where it was and the
// caller keeps fd.
func (q *Queue) Move(t *Ticket, fd int, ino uint64) bool {
	if !q.Join(fd, t.N) {
		return false
	}
	q.Drop(t)
	t.Fd, t.Ino = fd, ino
	return true
}

// First reports whether the waiter may attempt now: nobody is ahead of it,
// or whoever is ahead has been so for longer than Trust.
func (q *Queue) First(t *Ticket) bool {
	if t.Fd < 0 || !q.Ahead(t.Fd, t.N) {
		t.behind = time.Time{}
		return true
	}
	if t.behind.IsZero() {
		t.behind = time.Now()
	}
	return time.Since(t.behind) > q.Trust
}

// Drop drops the ticket's read lock and then closes its descriptor. The
// explicit unlock matters: the close is what wakes the waiters behind
// (IN_CLOSE_NOWRITE), and the kernel sends that event before it removes the
// closed file's locks, so a waiter woken by a bare close could still find
// this ticket ahead of it and go back to sleep with no event left to wake
// it.
func (q *Queue) Drop(t *Ticket) {
	if t != nil && t.Fd >= 0 {
		q.Leave(t.Fd, t.N)
		sys.Close(t.Fd)
		t.Fd = -1
	}
}

// Now is a waiter's arrival time on the host-wide monotonic clock: the
// tickets of the Queue and of the mailbox, and the owner's yields.
//
// It is read without a system call: the runtime's monotonic clock (the
// reading time.Now carries) is CLOCK_MONOTONIC itself, read through the
// vDSO, so a clock_gettime system call at the first use anchors it and
// every later ticket is that anchor plus the monotonic time since. A
// hand-off cycle asked for two tickets (the waiter's arrival, the owner's
// yield check), two system calls of about sixty. The anchor is off by at
// most half the time between the two runtime readings around the system
// call: usually about a microsecond, but a preemption between them can
// widen one window to milliseconds, and the anchor lasts the process's
// life, so the narrowest of a few tries is kept. Tickets order arrivals
// and time yields of milliseconds, and prove nothing. 0 where the clock
// cannot be read.
func Now() int64 {
	a := monoAnchor()
	if !a.ok {
		return 0
	}
	return a.ns + int64(time.Since(a.at))
}

type anchor struct {
	ns int64     // CLOCK_MONOTONIC at at
	at time.Time // with its monotonic reading
	ok bool
}

var monoAnchor = sync.OnceValue(func() anchor {
	var best anchor
	var width time.Duration
	for try := 0; try < anchorTries; try++ {
		before := time.Now()
		ns, err := sys.MonotonicNs()
		after := time.Now()
		if err != nil {
			return anchor{}
		}
		if w := after.Sub(before); !best.ok || w < width {
			best, width = anchor{ns: ns, at: before.Add(w / 2), ok: true}, w
		}
		if width <= anchorGood {
			break
		}
	}
	return best
})

// The anchor's tries: at most anchorTries system calls, once per process,
// ending at the first window no wider than anchorGood.
const (
	anchorTries = 5
	anchorGood  = 2 * time.Microsecond
)
