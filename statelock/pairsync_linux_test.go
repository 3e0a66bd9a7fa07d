//go:build !exactfs_portable

package statelock

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/statelock/internal/wake"
)

// pairedUpdate runs an Update that writes once two Locks are seated behind
// it (the first is its grantee, the second keeps the pair worth waiting
// for), and returns their outcomes and the Update's.
func pairedUpdate(t *testing.T, e *testEnv) (first, second <-chan lockOutcome, updated <-chan error) {
	t.Helper()
	updated = updateOnceSeated(e, 2, "paired\n")
	first = seatedLock(t, e)
	got := make(chan lockOutcome, 1)
	go func() {
		h, err := Lock(context.Background(), e.state, e.opts(WithWait(20*time.Second))...)
		got <- lockOutcome{h, err}
	}()
	return first, got, updated
}

// TestPairedFsyncWaitsForTheGranteesGrant: an Update that hands the lock to
// one of two seated waiters waits before its directory fsync until that
// grantee grants in turn (here a Lock that unlocks at once, to the second
// waiter), and is woken by that grant, not by its bound running out.
func TestPairedFsyncWaitsForTheGranteesGrant(t *testing.T) {
	requireCohort(t)
	pairSkip.Store(0)
	lastDirFsync.Store(int64(time.Second)) // as on a slow disk, whatever this one is
	e := newEnv(t)
	e.extra = append(e.extra, withPolicy(func(p *wake.Policy) { p.PairWait = time.Minute }))
	waits := countHook(t, hook.LockPairWait)
	first, second, updated := pairedUpdate(t, e)
	o := <-first
	if o.err != nil {
		t.Fatal(o.err)
	}
	if err := o.h.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-updated; err != nil {
		t.Fatal(err)
	}
	if o = <-second; o.err != nil {
		t.Fatal(o.err)
	}
	if err := o.h.Unlock(); err != nil {
		t.Fatal(err)
	}
	if waits.Load() != 1 || pairSkip.Load() != 0 {
		t.Fatalf("%d pair waits, skip count %d after them; want 1 wait, ended by the grantee's grant (skip 0)", waits.Load(), pairSkip.Load())
	}
	if got := string(mustRead(t, e.state)); got != "paired\n" {
		t.Fatalf("the state is %q", got)
	}
}

// TestPairedFsyncDoesNotWaitOnAGranteeThatHoldsOn: the grantee keeps the
// lock until the Update that handed it over has returned. The Update's
// wait for the grantee's grant ends at PairWait, it fsyncs and returns
// (waiting for the grant would deadlock here), and the next early
// releases of this process skip the wait.
func TestPairedFsyncDoesNotWaitOnAGranteeThatHoldsOn(t *testing.T) {
	requireCohort(t)
	pairSkip.Store(0)
	lastDirFsync.Store(int64(time.Second)) // as on a slow disk, whatever this one is
	defer pairSkip.Store(0)
	e := newEnv(t)
	e.extra = append(e.extra, withPolicy(func(p *wake.Policy) { p.PairWait = 50 * time.Millisecond }))
	waits := countHook(t, hook.LockPairWait)
	first, second, updated := pairedUpdate(t, e)
	o := <-first
	if o.err != nil {
		t.Fatal(o.err)
	}
	select {
	case err := <-updated:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the Update waited for its grantee, which holds the lock until the Update returns")
	}
	if waits.Load() != 1 || pairSkip.Load() != pairSkipAfterMiss {
		t.Fatalf("%d pair waits, skip count %d; want 1 wait that ran out (skip %d)", waits.Load(), pairSkip.Load(), pairSkipAfterMiss)
	}
	if err := o.h.Unlock(); err != nil {
		t.Fatal(err)
	}
	if o = <-second; o.err != nil {
		t.Fatal(o.err)
	}
	if err := o.h.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// TestPairsDoNotChain: the grantee of a granter that waits for it is the
// second of a pair and fsyncs at once, although more waiters are seated
// behind it; else every holder would wait for the next, each fsync would
// only move one cycle on, and none would pair (as a first version did).
// The two early releases are driven on one mailbox by hand, as two
// processes' Updates would make them.
func TestPairsDoNotChain(t *testing.T) {
	requireCohort(t)
	pairSkip.Store(0)
	lastDirFsync.Store(int64(time.Second))
	d, err := exactfs.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	mb, err := wake.Open(d, "state.json.lock", true)
	if err != nil {
		t.Fatal(err)
	}
	defer mb.Close()
	for i := range 3 {
		if _, err := mb.Take([]byte(fmt.Sprintf(`{"w":%d}`, i)), int64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	policy := defaultPolicy
	policy.PairWait = time.Minute
	release := func(name string) (*locker, func()) {
		g := mb.Grant(nil)
		if g == nil {
			t.Fatal("no seat to grant")
		}
		tag := g.Promise()
		g.Done()
		l := &locker{cfg: config{policy: &policy}, lockPath: name}
		l.promised = granterPromise{tag: tag, seq: g.Seq(), mb: mb}
		return l, func() { l.pairDirSync() }
	}
	fl, first := release("first")
	var waits atomic.Int32
	var announced atomic.Bool
	defer hook.Set(hook.LockPairWait, func(string) {
		// The first granter, about to sleep: its grantee's rename (the
		// next tag) must read as covered already, for the grantee checks
		// before this granter is awake again.
		waits.Add(1)
		announced.Store(mb.DirSyncCovers(fl.promised.tag + 1))
	})()
	firstDone := make(chan struct{})
	go func() { first(); close(firstDone) }()
	for start := time.Now(); waits.Load() < 1; time.Sleep(time.Millisecond) {
		if time.Since(start) > 20*time.Second {
			t.Fatal("the first granter, with two waiters seated behind its grantee, did not wait for it")
		}
	}
	_, second := release("second") // its grantee's grant: wakes the first
	select {
	case <-firstDone:
	case <-time.After(30 * time.Second):
		t.Fatal("the first granter was not woken by its grantee's grant")
	}
	secondDone := make(chan struct{})
	go func() { second(); close(secondDone) }()
	select {
	case <-secondDone:
	case <-time.After(30 * time.Second):
		t.Fatal("the second of a pair waited for its own grantee: pairs chain")
	}
	if waits.Load() != 1 || !announced.Load() {
		t.Fatalf("%d pair waits (want the first granter's only); its grantee's rename covered before it slept: %v (want true)", waits.Load(), announced.Load())
	}
}
