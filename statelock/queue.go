package statelock

import (
	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/statelock/internal/wake"
)

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
	if !l.cfg.policy.Move(t, p.fd, p.ino) {
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
