//go:build !exactfs_portable

package statelock

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/statelock/internal/wake"
)

// The readers' rule through the mailbox (readsync.go): a holder handed the
// lock by an Update that released before its directory fsync waits for
// that fsync instead of making its own, and only then returns; a promise
// broken by the granter's death, or no promise at all, and it fsyncs.

// readersRuleCounts counts the three ways the readers' rule ends.
func readersRuleCounts(t *testing.T) (promised, synced, broken *atomic.Int32) {
	return countHook(t, hook.LockReadersRulePromise), countHook(t, hook.LockReadersRuleSync),
		countHook(t, hook.LockReadersRuleBroken)
}

// updateOnceSeated starts an Update of e's state that writes data once
// seats Go waiters are seated behind it, and returns when it holds the
// lock; its outcome comes on the channel.
func updateOnceSeated(e *testEnv, seats int, data string) <-chan error {
	holding := make(chan struct{})
	updated := make(chan error, 1)
	go func() {
		updated <- Update(context.Background(), e.state, func([]byte) ([]byte, error) {
			close(holding)
			for start := time.Now(); waitingSeats(e) < seats; {
				if time.Since(start) > 20*time.Second {
					return nil, fmt.Errorf("%d waiters were seated, not %d", waitingSeats(e), seats)
				}
				time.Sleep(time.Millisecond)
			}
			return []byte(data), nil
		}, e.opts()...)
	}()
	<-holding
	return updated
}

// The readers: a Lock, and an Update whose function writes nothing (it
// reads, and is told that what it read is the state).
var promiseReaders = []struct {
	name string
	read func(ctx context.Context, e *testEnv) ([]byte, error)
}{
	{"Lock", func(ctx context.Context, e *testEnv) ([]byte, error) {
		h, err := Lock(ctx, e.state, e.opts(WithWait(30*time.Second))...)
		if err != nil {
			return nil, err
		}
		defer h.Unlock()
		return os.ReadFile(e.state)
	}},
	{"UpdateNoChange", func(ctx context.Context, e *testEnv) ([]byte, error) {
		var got []byte
		err := Update(ctx, e.state, func(old []byte) ([]byte, error) {
			got = old
			return nil, ErrNoChange
		}, e.opts(WithWait(30*time.Second), WithGroupCommit(false))...) // not a batch of the granter's
		return got, err
	}},
}

// TestReaderGrantedByUpdateWaitsForItsFsync: the Update's directory fsync
// is held back 200 ms after its early release (the window a slow disk
// opens); the reader it handed the lock to returns only after that fsync
// began, and made none of its own. Without the promise the reader fsyncs
// the directory itself and returns inside the window.
func TestReaderGrantedByUpdateWaitsForItsFsync(t *testing.T) {
	requireCohort(t)
	for _, rd := range promiseReaders {
		t.Run(rd.name, func(t *testing.T) {
			e := newEnv(t)
			e.extra = append(e.extra, withPolicy(func(p *wake.Policy) { p.SyncWait = time.Minute }))
			promised, synced, broken := readersRuleCounts(t)
			var fsyncFrom atomic.Int64
			defer hook.Set(hook.Committed, func(p string) {
				if filepath.Base(p) == filepath.Base(e.state) {
					time.Sleep(200 * time.Millisecond)
					fsyncFrom.Store(time.Now().UnixNano())
				}
			})()
			updated := updateOnceSeated(e, 1, "written by the granter\n")
			got, err := rd.read(context.Background(), e)
			returned := time.Now().UnixNano()
			if err != nil {
				t.Fatal(err)
			}
			if err := <-updated; err != nil {
				t.Fatal(err)
			}
			if string(got) != "written by the granter\n" {
				t.Fatalf("the reader read %q", got)
			}
			if promised.Load() != 1 || synced.Load() != 0 || broken.Load() != 0 {
				t.Fatalf("the readers' rule: %d promises kept, %d own fsyncs, %d promises broken; want 1, 0, 0",
					promised.Load(), synced.Load(), broken.Load())
			}
			if from := fsyncFrom.Load(); from == 0 || returned < from {
				t.Fatalf("the reader returned %v before its granter's directory fsync began",
					time.Duration(from-returned))
			}
		})
	}
}

// TestReaderGrantedByUpdateKilledBeforeFsyncSyncsItself: the granter, an
// Update in another process, is killed after its early release and before
// its directory fsync. Its promise is never kept: the reader waits out
// SyncWait and fsyncs the directory itself.
func TestReaderGrantedByUpdateKilledBeforeFsyncSyncsItself(t *testing.T) {
	requireCohort(t)
	for _, rd := range promiseReaders {
		t.Run(rd.name, func(t *testing.T) {
			e := newEnv(t)
			e.extra = append(e.extra, withPolicy(func(p *wake.Policy) { p.SyncWait = 200 * time.Millisecond }))
			cmd, _ := startHolder(t, e, "STATELOCK_HOLD_UPDATE=1", "STATELOCK_HOLD_UPDATE_BYTES=written by the granter",
				"STATELOCK_KILL_HOOK="+hook.Committed)
			accepted := countHook(t, hook.LockHandoffAccepted)
			promised, synced, broken := readersRuleCounts(t)
			got, err := rd.read(context.Background(), e)
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err == nil {
				t.Fatal("the granter was not killed at its commit")
			}
			if string(got) != "written by the granter" {
				t.Fatalf("the reader read %q", got)
			}
			if accepted.Load() != 1 {
				t.Fatalf("the reader accepted %d grants, want 1", accepted.Load())
			}
			if promised.Load() != 0 || synced.Load() != 1 || broken.Load() != 1 {
				t.Fatalf("the readers' rule: %d promises kept, %d own fsyncs, %d promises broken; want 0, 1, 1",
					promised.Load(), synced.Load(), broken.Load())
			}
		})
	}
}

// TestReaderGrantedByUnlockSyncsItself: a Lock holder's Unlock promises
// nothing (its caller's writes were its caller's to make durable): the
// reader it hands the lock to fsyncs the directory itself.
func TestReaderGrantedByUnlockSyncsItself(t *testing.T) {
	requireCohort(t)
	e := newEnv(t)
	cmd, _ := startHolder(t, e)
	accepted := countHook(t, hook.LockHandoffAccepted)
	promised, synced, broken := readersRuleCounts(t)
	h, err := Lock(context.Background(), e.state, e.opts(WithWait(30*time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Unlock()
	cmd.Wait()
	if accepted.Load() != 1 || promised.Load() != 0 || synced.Load() != 1 || broken.Load() != 0 {
		t.Fatalf("%d grants accepted; the readers' rule: %d promises kept, %d own fsyncs, %d broken; want 1, 0, 1, 0",
			accepted.Load(), promised.Load(), synced.Load(), broken.Load())
	}
}

// TestReaderResumingKeptRecordWaitsForItsFsync: within one process, an
// Update whose release kept F.lock for this process (sticky ownership) has
// its directory fsync held back 200 ms; a Lock of this process takes the
// kept record back meanwhile and returns only after that fsync began, with
// none of its own. Nobody else held the lock in between, so the last
// rename is that Update's. Without the local promise the Lock fsyncs the
// directory itself and returns inside the window.
func TestReaderResumingKeptRecordWaitsForItsFsync(t *testing.T) {
	requireCohort(t)
	e := newEnv(t)
	e.extra = append(e.extra, withPolicy(func(p *wake.Policy) {
		p.Sticky, p.StickyIdle, p.SyncWait = true, time.Hour, time.Minute
	}))
	write := func(b string) error {
		return Update(context.Background(), e.state, func([]byte) ([]byte, error) { return []byte(b), nil }, e.opts()...)
	}
	// The first release is not kept (the process has not re-locked yet);
	// the second Update is a re-lock, so its release keeps the record.
	if err := write("first\n"); err != nil {
		t.Fatal(err)
	}
	kept := countHook(t, hook.LockStickyKept)
	resumed := countHook(t, hook.LockStickyResumed)
	promised, synced, broken := readersRuleCounts(t)
	released := make(chan struct{})
	var fsyncFrom atomic.Int64
	defer hook.Set(hook.Committed, hook.Once(func(p string) {
		close(released)
		time.Sleep(200 * time.Millisecond)
		fsyncFrom.Store(time.Now().UnixNano())
	}))()
	updated := make(chan error, 1)
	go func() { updated <- write("second\n") }()
	<-released
	if kept.Load() != 1 {
		t.Fatalf("the second Update's release kept %d records, want 1", kept.Load())
	}
	h, err := Lock(context.Background(), e.state, e.opts()...)
	returned := time.Now().UnixNano()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Unlock()
	if err := <-updated; err != nil {
		t.Fatal(err)
	}
	if resumed.Load() != 1 {
		t.Fatalf("the Lock took back %d kept records, want 1", resumed.Load())
	}
	if got := mustRead(t, e.state); string(got) != "second\n" {
		t.Fatalf("the state is %q", got)
	}
	if promised.Load() != 1 || synced.Load() != 0 || broken.Load() != 0 {
		t.Fatalf("the readers' rule: %d promises kept, %d own fsyncs, %d promises broken; want 1, 0, 0",
			promised.Load(), synced.Load(), broken.Load())
	}
	if from := fsyncFrom.Load(); from == 0 || returned < from {
		t.Fatalf("the Lock returned %v before the Update's directory fsync began", time.Duration(from-returned))
	}
}
