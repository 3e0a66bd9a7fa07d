package wake

import (
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/exactfs/exactfs/internal/sys"
)

// The readers' rule through the mailbox (SPEC §4.6: a holder that returns
// without writing first makes sure the rename it read is durable; "it
// waits for the previous holder's directory fsync, or does one itself").
//
// An Update that releases early grants F.lock before its directory fsync.
// Its grant then carries a promise: a sync tag t, numbered in lock order
// (each promise is made by the owner of the moment, so tags follow the
// order of the renames they cover). Once its fsync has returned, the
// granter marks t done. A grantee that must not read bytes a power cut
// could undo (a Lock, an Update whose function wrote nothing) waits for t
// instead of fsyncing the directory itself, which on a disk is a device
// flush queued behind the granter's. A mark of t also covers every tag
// before it: the fsync behind it began after its own rename, which came
// after every earlier holder's.
//
// Header words (after the bell, mailbox.go): the promise of the last grant
// (uint64 at 24: the GRANTED word of that grant in the high half, so that a
// grantee never takes another grant's promise for its own, and its tag in
// the low half, 0 for none), the last tag issued (uint32 at 32), the
// highest tag done (uint32 at 36) and the count of grantees asleep on it
// (uint32 at 40). An older build never promises and never writes them: its
// grants leave a promise that names another GRANTED word, and its
// grantees fsync as before.

func (m *Mailbox) header64(off int) *uint64 {
	return (*uint64)(unsafe.Pointer(&m.mem[Seats*SeatSize+off]))
}

func (m *Mailbox) header32(off int) *uint32 {
	return (*uint32)(unsafe.Pointer(&m.mem[Seats*SeatSize+off]))
}

func (m *Mailbox) promise() *uint64      { return m.header64(24) }
func (m *Mailbox) syncIssued() *uint32   { return m.header32(32) }
func (m *Mailbox) syncDone() *uint32     { return m.header32(36) }
func (m *Mailbox) syncSleepers() *uint32 { return m.header32(40) }

// reached reports whether tag done covers tag t, across the counter's
// wrap: tags are compared by their distance, as sequence numbers are.
func reached(done, t uint32) bool { return int32(done-t) >= 0 }

// Promise makes the grant carry a sync tag (a new one, never 0) and
// returns it: the granter will fsync the directory after its release and
// then call SyncDone with it. Call it before Done.
func (g *Grant) Promise() uint32 {
	t := atomic.AddUint32(g.m.syncIssued(), 1)
	if t == 0 {
		t = atomic.AddUint32(g.m.syncIssued(), 1)
	}
	atomic.StoreUint64(g.m.promise(), uint64(next(g.w, Granted))<<32|uint64(t))
	g.counted()
	return t
}

// NoPromise clears the last grant's promise: this grant's granter makes
// none (its caller's writes are its caller's, made durable or not by it).
// Call it before Done.
func (g *Grant) NoPromise() {
	atomic.StoreUint64(g.m.promise(), 0)
	g.counted()
}

// Promised is the sync tag of the grant this seat received (0: none). Call
// it once the grant is taken and before Leave: it is the promise only if
// the seat is still GRANTED with the very word the promise names.
func (s *Seat) Promised() uint32 {
	w := atomic.LoadUint32(s.m.wordAt(s.i))
	if stateOf(w) != Granted {
		return 0
	}
	p := atomic.LoadUint64(s.m.promise())
	if uint32(p>>32) != w {
		return 0
	}
	return uint32(p)
}

// SyncDone marks tag t done: the directory fsync it promised has returned.
// Grantees waiting for t, or for an earlier tag, are woken.
func (m *Mailbox) SyncDone(t uint32) {
	d := m.syncDone()
	for {
		old := atomic.LoadUint32(d)
		if reached(old, t) {
			break
		}
		if atomic.CompareAndSwapUint32(d, old, t) {
			break
		}
	}
	if atomic.LoadUint32(m.syncSleepers()) != 0 {
		sys.FutexWake(d, 1<<30)
	}
}

// WaitSynced waits until tag t is done, for at most d, and reports whether
// it is. A granter killed before its fsync returned never marks its tag:
// the grantee then fsyncs itself when d is up.
func (m *Mailbox) WaitSynced(t uint32, d time.Duration) bool {
	w := m.syncDone()
	if reached(atomic.LoadUint32(w), t) {
		return true
	}
	atomic.AddUint32(m.syncSleepers(), 1)
	defer atomic.AddUint32(m.syncSleepers(), ^uint32(0))
	end := time.Now().Add(d)
	for {
		cur := atomic.LoadUint32(w)
		if reached(cur, t) {
			return true
		}
		left := time.Until(end)
		if left <= 0 {
			return false
		}
		sleepOn(w, cur, left, nil)
	}
}
