package wake

import (
	"sync/atomic"
	"time"

	"github.com/exactfs/exactfs/internal/sys"
)

// Paired directory fsyncs. Every early-released Update fsyncs the directory
// itself after its rename (SPEC §4.6); what pairing changes is when. On a
// disk the contended cycle is bound by the device: a directory fsync
// writes the directory's block and inode and then flushes. A granter that
// waits, before its fsync, until its grantee has renamed too writes both
// renames at once; the grantee's own fsync, which starts about then, finds
// little of the directory left to write. The grantee does not wait for its
// own grantee (that would only move every fsync one cycle on): before it
// sleeps, its granter announces that its fsync covers the next tag, so
// the grantee finds its rename covered and fsyncs at once, and the holder
// after it pairs again.
//
// The tags are the promises' (sync.go): a grant's tag is issued after the
// granter's rename and before its grantee can rename, so tags follow the
// renames' order. Header words: the highest tag a directory fsync covers,
// begun or announced (uint32 at 44): every rename whose grant has a tag up
// to it came before that fsync, or will have before it begins; the count
// of grants by this build (uint32 at 48), which a granter waits to see
// move on (its grantee granted in turn, with a promise or, a reader,
// without); and the count of granters asleep on it (uint32 at 52). An
// older build never writes them: a granter then waits for a grantee that
// never counts its grant for at most its bound, and its process pairs
// less often after a miss (statelock).

func (m *Mailbox) dirSyncFrom() *uint32   { return m.header32(44) }
func (m *Mailbox) grants() *uint32        { return m.header32(48) }
func (m *Mailbox) grantSleepers() *uint32 { return m.header32(52) }

// DirSyncCovers reports whether a directory fsync that begins after the
// rename behind tag t has begun or been announced: the caller is the
// second of a pair, its own fsync has little left to write, and it must
// not wait for a grantee of its own.
func (m *Mailbox) DirSyncCovers(t uint32) bool {
	return reached(atomic.LoadUint32(m.dirSyncFrom()), t)
}

// DirSyncBegins records that the caller's directory fsync is about to
// begin: every rename with a tag issued until now came before it. Call it
// just before the fsync.
func (m *Mailbox) DirSyncBegins() { m.covered(atomic.LoadUint32(m.syncIssued())) }

// CoverNext records, before the granter of tag t waits for the next grant
// (AwaitNextGrant), that its fsync will begin after the rename behind the
// next tag: that grantee, finding its rename covered, fsyncs at once
// instead of waiting for a grantee of its own, and the pair is made. If
// the wait runs out first, the grantee's own fsync has more to write than
// it expected, and that is all.
func (m *Mailbox) CoverNext(t uint32) { m.covered(t + 1) }

func (m *Mailbox) covered(s uint32) {
	w := m.dirSyncFrom()
	for {
		old := atomic.LoadUint32(w)
		if reached(old, s) || atomic.CompareAndSwapUint32(w, old, s) {
			return
		}
	}
}

// counted counts grant g (Promise and NoPromise call it) and wakes the
// granters waiting in AwaitNextGrant.
func (g *Grant) counted() {
	g.seq = atomic.AddUint32(g.m.grants(), 1)
	if atomic.LoadUint32(g.m.grantSleepers()) != 0 {
		sys.FutexWake(g.m.grants(), 1<<30)
	}
}

// Seq is grant g's number in the count of grants (after Promise or
// NoPromise), for AwaitNextGrant.
func (g *Grant) Seq() uint32 { return g.seq }

// AwaitNextGrant waits until a grant after the one numbered seq has been
// made (its grantee renamed, if it writes, and granted in turn), for at
// most d, and reports whether one was.
func (m *Mailbox) AwaitNextGrant(seq uint32, d time.Duration) bool {
	w := m.grants()
	if atomic.LoadUint32(w) != seq {
		return true
	}
	atomic.AddUint32(m.grantSleepers(), 1)
	defer atomic.AddUint32(m.grantSleepers(), ^uint32(0))
	end := time.Now().Add(d)
	for {
		if atomic.LoadUint32(w) != seq {
			return true
		}
		left := time.Until(end)
		if left <= 0 {
			return false
		}
		sleepOn(w, seq, left, nil)
	}
}
