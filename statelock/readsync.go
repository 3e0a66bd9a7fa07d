package statelock

import (
	"sync/atomic"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/statelock/internal/wake"
)

// The readers' rule through the mailbox (SPEC §4.6: a holder that returns
// without writing first makes sure the rename it read is durable, "it
// waits for the previous holder's directory fsync, or does one itself";
// the mailbox's side is wake/sync.go).
//
// An Update that releases early hands F.lock to a seated Go waiter before
// its directory fsync. Its grant promises that fsync (a sync tag), and the
// Update marks the tag done once the fsync has returned, before Update
// returns. A Lock granted that way (or an Update whose function writes
// nothing) waits for the tag instead of fsyncing the directory itself: on
// a disk without a journal an fsync with nothing of ours to write still
// flushes the device's cache, queued behind the granter's own flush, so
// every reader after a writer paid a second flush for nothing.
//
// What a grantee relies on is only the granter's own word, marked after
// its fsync returned without error: a granter that fails its fsync marks
// nothing, one killed before it marks nothing, a granter that is not an
// early-released Update (an Unlock: its caller's writes are its caller's
// to make durable) promises nothing, and an older exactfs never promises.
// In each case the grantee fsyncs itself, after at most the policy's
// SyncWait when a promise was made and never kept. A grantee that left its
// seat before it read the promise, or whose mailbox was replaced since,
// fsyncs itself too.

// The same holds within one process: an early-released Update whose
// release keeps F.lock for this process (sticky.go) leaves the kept record
// a local promise of its fsync, and the Lock of this process that takes
// the record back waits for it. Nobody else held the lock in between: the
// record was never released (resume proves it unchanged), so the last
// rename is that Update's.

// granterPromise is what an early release promised: in its grant, the
// tag and the mailbox it is marked in, of which the granter holds a
// reference (done) until then; to this process's next Lock, when the
// release kept the record, local.
type granterPromise struct {
	tag   uint32
	seq   uint32 // the grant's number (pairsync.go)
	mb    *wake.Mailbox
	done  func()
	local *localSync
}

// localSync is a promise within this process: done is closed when the
// fsync has returned, ok set before that when it returned without error.
type localSync struct {
	done chan struct{}
	ok   atomic.Bool
}

// syncPromise is the promise this call's acquisition received: a grant's
// (tag 0: none) and the mailbox mapping it was read in, or a kept record's
// (local).
type syncPromise struct {
	tag   uint32
	mb    *wake.Mailbox
	local *localSync
}

// keepPromise ends this call's promise, if its release made one: synced,
// the directory fsync has returned without error and the tag is marked
// done; otherwise it is left unmarked (the grantee fsyncs itself).
func (l *locker) keepPromise(synced bool) {
	p := l.promised
	l.promised = granterPromise{}
	if p.local != nil {
		p.local.ok.Store(synced)
		close(p.local.done)
	}
	if p.mb == nil {
		return
	}
	if synced {
		p.mb.SyncDone(p.tag)
	}
	p.done()
}

// grantersSync reports whether the rename this holder may read is durable
// by its granter's promised fsync, waiting for it at most the policy's
// SyncWait; false: the caller fsyncs the directory itself.
func (l *locker) grantersSync() bool {
	p := l.granted
	l.granted = syncPromise{}
	if p.local != nil {
		select {
		case <-p.local.done: // as in a loop of Update, Lock: returned already
		default:
			t := time.NewTimer(l.cfg.policy.SyncWait)
			select {
			case <-p.local.done:
			case <-t.C:
			}
			t.Stop()
		}
		if !p.local.ok.Load() {
			hook.Fire(hook.LockReadersRuleBroken, l.lockPath)
			return false
		}
		hook.Fire(hook.LockReadersRulePromise, l.lockPath)
		return true
	}
	if p.tag == 0 {
		return false
	}
	mb, done := l.mailbox(false)
	if mb == nil {
		return false
	}
	defer done()
	if mb != p.mb {
		return false
	}
	if !mb.WaitSynced(p.tag, l.cfg.policy.SyncWait) {
		hook.Fire(hook.LockReadersRuleBroken, l.lockPath)
		return false
	}
	hook.Fire(hook.LockReadersRulePromise, l.lockPath)
	return true
}
