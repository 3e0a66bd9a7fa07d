package statelock

import (
	"sync/atomic"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
)

// Paired directory fsyncs (wake/pair.go). An Update that released early by
// handing F.lock to a seated waiter fsyncs the directory next, as it must
// (SPEC §4.6), but when other waiters are seated behind its grantee it
// first waits, at most the policy's PairWait, until the grantee has
// renamed and granted in turn: its fsync then writes both renames, and
// the grantee's own fsync, which begins about then, finds little of the
// directory left to write. The granter announces, before it sleeps, that
// its fsync covers its grantee's rename, and a holder whose rename is
// covered so (or by a started fsync) does not wait: it is the second of
// the pair, so pairs do not chain. (A first version let the grantee look
// only for a started fsync; it looked before its granter was awake again,
// so every holder waited for the next and none paired: device writes per
// increment did not move.) With nobody seated behind the grantee, the
// granter's own next Update is the grantee's next waiter, and waiting
// would leave the lock idle: it fsyncs at once.
//
// Pairing pays only where a directory fsync writes to a device: on tmpfs,
// or a disk that acknowledges a flush at once, the granter's wait would
// only keep it from queueing again. So a process pairs only while its last
// directory fsync that was not the second of a pair took pairFromFsync or
// longer (none measured yet: it does not pair).
//
// Durability is not touched: every Update still returns only once its own
// directory fsync, begun after its rename, has returned; only the moment
// that fsync begins moves, by at most PairWait.

// pairSkipAfterMiss is how many early releases of this process skip the
// wait after one that ran out (a grantee that held on, or one of an older
// build, which never counts its grant): such a peer costs this process's
// Updates PairWait at most once in that many.
const pairSkipAfterMiss = 16

var pairSkip atomic.Int32

// pairFromFsync is the directory fsync that makes pairing worth its wait:
// on the disks measured (bench/COSTS.md) one takes 150-300 µs, on tmpfs a
// few µs.
const pairFromFsync = 100 * time.Microsecond

// lastDirFsync is how long the last directory fsync of an early-released
// Update of this process took, when it was not the second of a pair
// (whose fsync has little left to write).
var lastDirFsync atomic.Int64

// pairDirSync is called by an early-released Update between its release
// and its directory fsync. It reports whether that fsync is worth timing
// for lastDirFsync: false when it is the second of a pair (a granter's
// fsync covers our rename).
func (l *locker) pairDirSync() (timed bool) {
	p := l.promised
	if p.mb == nil || p.tag == 0 || lastDirFsync.Load() < int64(pairFromFsync) {
		// No grant, or fsyncs too fast to pair (every process on this
		// filesystem finds the same): the mailbox is not touched.
		return true
	}
	if p.mb.DirSyncCovers(p.tag) {
		p.mb.DirSyncBegins()
		return false
	}
	wait := l.cfg.policy.PairWait
	switch {
	case wait <= 0, p.mb.Waiting() == 0:
	case pairSkip.Load() > 0:
		pairSkip.Add(-1)
	default:
		p.mb.CoverNext(p.tag) // our grantee is the second of the pair: it will not wait
		hook.Fire(hook.LockPairWait, l.lockPath)
		if !p.mb.AwaitNextGrant(p.seq, wait) {
			pairSkip.Store(pairSkipAfterMiss)
		}
	}
	p.mb.DirSyncBegins()
	return true
}
