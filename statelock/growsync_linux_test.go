//go:build !exactfs_portable

package statelock

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/exactfs/exactfs/internal/hook"
)

// A write that makes a record file longer is fsynced before it is relied
// on (writeGrowing), and no write of the steady state grows one: F.lock's
// creation, and a tombstone shorter than our record (a compact one, as the
// reference leaves) reused, each sync once; the cycles after them never.
// A power cut between such a write and writeback left ext4 with the old
// bytes followed by zero bytes, which the reference never reclaims
// (TestPowerCutCohort). Fails without the
// fsync of the growth: the hook before it never fires.
func TestRecordGrowthIsSynced(t *testing.T) {
	e := newEnv(t)
	longSticky(t, e)
	var (
		mu    sync.Mutex
		grows = map[string]int{}
	)
	defer hook.Set(hook.LockRecordGrowSync, func(path string) {
		// The bytes are written and the file longer, not yet durable.
		mu.Lock()
		grows[filepath.Base(path)]++
		mu.Unlock()
	})()
	count := func() (lock, total int) {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range grows {
			total += n
		}
		lock = grows[filepath.Base(e.lock)]
		clear(grows)
		return lock, total
	}

	stickyCycle(t, e) // creates F.lock; the first release leaves a tombstone
	if lock, _ := count(); lock != 1 {
		t.Fatalf("F.lock's creation synced %d times, want 1", lock)
	}
	if !recordAt(t, e).Released {
		t.Fatal("after the first cycle F.lock is not a tombstone")
	}
	// The tombstone as a compact one, without our padding.
	compact := bytes.TrimRight(mustRead(t, e.lock), " ")
	if err := os.Truncate(e.lock, int64(len(compact))); err != nil {
		t.Fatal(err)
	}
	stickyCycle(t, e)
	lock, _ := count()
	if got := int64(len(mustRead(t, e.lock))); got <= int64(len(compact)) {
		t.Fatalf("our record (%d bytes) is not longer than the tombstone (%d): nothing grew", got, len(compact))
	}
	if lock != 1 {
		t.Fatalf("reusing a shorter tombstone synced F.lock %d times, want 1", lock)
	}
	for range 5 {
		stickyCycle(t, e)
	}
	if _, total := count(); total != 0 {
		t.Fatalf("the steady state grew a record file %d times, want none", total)
	}
}
