package store

// Lease tests that need no POSIX: they run on Unix and on Windows (under
// Wine in CI). The ones that do (signals, modes, symlinks, FIFOs, boot
// ids, inodes from stat) are in lease_test.go.

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/liveness"
)

func TestLeaseExpiredButAliveIsNotStolen(t *testing.T) {
	dir := locksDir(t)
	holder := acquire(t, dir, "job", LeaseDuration(300*time.Millisecond), HeartbeatInterval(0))
	time.Sleep(400 * time.Millisecond) // expired; the holder (this process) is alive
	start := time.Now()
	_, err := AcquireLease(context.Background(), dir, "job", WaitBudget(300*time.Millisecond))
	if !errors.Is(err, ErrLeaseBusy) {
		t.Fatalf("second acquirer: %v, want lease busy", err)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Fatalf("gave up after %v, before its budget", waited)
	}
	if !strings.Contains(err.Error(), "not provably gone") {
		t.Fatalf("the error does not say why: %v", err)
	}
	if err := holder.AssertOwned(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	r, _ := ParseLeaseRecord(readFile(t, holder.Path()))
	if r.LeaseExpiresAt <= time.Now().UnixMilli() {
		t.Fatalf("AssertOwned did not renew the expired lease: %+v", r)
	}
}

func TestLeaseRenewsNearExpiry(t *testing.T) {
	dir := locksDir(t)
	l := acquire(t, dir, "job", LeaseDuration(time.Second), HeartbeatInterval(0))
	r0, _ := ParseLeaseRecord(readFile(t, l.Path()))
	if err := l.AssertOwned(); err != nil {
		t.Fatal(err)
	}
	if r, _ := ParseLeaseRecord(readFile(t, l.Path())); r != r0 {
		t.Fatal("renewed a lease far from expiry")
	}
	time.Sleep(900 * time.Millisecond) // within a sixth of the lease of expiry
	if err := l.AssertOwned(); err != nil {
		t.Fatal(err)
	}
	r, _ := ParseLeaseRecord(readFile(t, l.Path()))
	if r.HeartbeatAt <= r0.HeartbeatAt || r.LeaseExpiresAt <= r0.LeaseExpiresAt || r.CreatedAt != r0.CreatedAt {
		t.Fatalf("not renewed: %+v -> %+v", r0, r)
	}
}

func TestLeaseHeartbeatRenewsAndStops(t *testing.T) {
	dir := locksDir(t)
	base := runtime.NumGoroutine()
	l, err := AcquireLease(context.Background(), dir, "job", LeaseDuration(400*time.Millisecond), HeartbeatInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond)
	r, _ := ParseLeaseRecord(readFile(t, l.Path()))
	if r.LeaseExpiresAt <= time.Now().UnixMilli() || r.HeartbeatAt == r.CreatedAt {
		t.Fatalf("heartbeat did not renew: %+v", r)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		t.Fatalf("goroutines: %d before, %d after Release", base, n)
	}
	b := readFile(t, l.Path())
	time.Sleep(150 * time.Millisecond)
	if !bytes.Equal(readFile(t, l.Path()), b) {
		t.Fatal("the record changed after Release")
	}
}

func TestLeaseRecordRewrittenByAnotherAttempt(t *testing.T) {
	dir := locksDir(t)
	l := acquire(t, dir, "job")
	stealLease(t, l.Path())
	stolen := readFile(t, l.Path())
	if err := l.AssertOwned(); !errors.Is(err, ErrLeaseLost) || !strings.Contains(err.Error(), "another attempt") {
		t.Fatalf("assert: %v", err)
	}
	if err := l.Release(); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("release: %v", err)
	}
	if !bytes.Equal(readFile(t, l.Path()), stolen) {
		t.Fatal("release wrote over the other attempt's record")
	}
}

func TestLeaseRenamedAwayAndCopiedBack(t *testing.T) {
	dir := locksDir(t)
	l := acquire(t, dir, "job")
	orig := readFile(t, l.Path())
	aside := filepath.Join(dir, "aside")
	if err := os.Rename(l.Path(), aside); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.Path(), orig, 0o600); err != nil {
		t.Fatal(err)
	}
	copyIno := inode(t, l.Path())
	if err := l.AssertOwned(); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("assert with a byte-identical copy at the path: %v", err)
	}
	if err := l.Release(); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("release: %v", err)
	}
	if !bytes.Equal(readFile(t, l.Path()), orig) || inode(t, l.Path()) != copyIno {
		t.Fatal("release touched the copy")
	}
	if !bytes.Equal(readFile(t, aside), orig) {
		t.Fatal("release rewrote the renamed-away file without proving it owns the path")
	}
}

func TestLeaseReleaseAfterSuccessorLeavesIt(t *testing.T) {
	dir := locksDir(t)
	a := acquire(t, dir, "job", LeaseDuration(200*time.Millisecond), HeartbeatInterval(0), withoutAttestation())
	time.Sleep(250 * time.Millisecond)
	// The successor is told that a's owner is gone (a stands for a holder
	// that froze and was judged dead; its record claims no kernel lock,
	// which in this process would prove it alive).
	b := acquire(t, dir, "job", WaitBudget(time.Second), withProbe(goneProbe{pid: os.Getpid()}))
	if b.Fence() <= a.Fence() {
		t.Fatalf("successor's fence %d, predecessor's %d", b.Fence(), a.Fence())
	}
	succ := readFile(t, b.Path())
	ino := inode(t, b.Path())
	if err := a.AssertOwned(); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("predecessor assert: %v", err)
	}
	if err := a.Release(); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("predecessor release: %v", err)
	}
	if !bytes.Equal(readFile(t, b.Path()), succ) || inode(t, b.Path()) != ino {
		t.Fatal("the stale release touched the successor")
	}
	if err := b.AssertOwned(); err != nil {
		t.Fatal(err)
	}
}

func TestLeaseMalformedAndEmptyRecords(t *testing.T) {
	dir := locksDir(t)
	os.WriteFile(filepath.Join(dir, "bad.lock"), []byte(`{"pid":`), 0o600)
	_, err := AcquireLease(context.Background(), dir, "bad", WaitBudget(0), withEmptyAge(0))
	if !errors.Is(err, ErrLeaseBusy) || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("malformed record: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "empty.lock"), nil, 0o600)
	if _, err := AcquireLease(context.Background(), dir, "empty", WaitBudget(0)); !errors.Is(err, ErrLeaseBusy) {
		t.Fatalf("fresh empty record: %v", err)
	}
	l, err := AcquireLease(context.Background(), dir, "empty", WaitBudget(0), withEmptyAge(0))
	if err != nil {
		t.Fatalf("old empty record: %v", err)
	}
	l.Release()
}

func TestLeaseWaitCancelledByContext(t *testing.T) {
	dir := locksDir(t)
	acquire(t, dir, "job")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := AcquireLease(ctx, dir, "job", WaitBudget(time.Minute))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("cancelled wait: %v after %v", err, time.Since(start))
	}
}

// Concurrent goroutines of one process: exclusion and increasing fences.
func TestLeaseExclusionInProcess(t *testing.T) {
	dir := locksDir(t)
	var mu sync.Mutex
	holders, maxHolders := 0, 0
	var fences []uint64
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				l, err := AcquireLease(context.Background(), dir, "job", WaitBudget(30*time.Second), PollInterval(time.Millisecond))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				holders++
				maxHolders = max(maxHolders, holders)
				fences = append(fences, l.Fence())
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				holders--
				mu.Unlock()
				if err := l.Release(); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if maxHolders != 1 {
		t.Fatalf("%d holders at once", maxHolders)
	}
	for i := 1; i < len(fences); i++ {
		if fences[i] <= fences[i-1] {
			t.Fatalf("fences not increasing: %v", fences)
		}
	}
}

func TestLeaseHeartbeatNoticesLoss(t *testing.T) {
	dir := locksDir(t)
	base := runtime.NumGoroutine()
	l, err := AcquireLease(context.Background(), dir, "job", HeartbeatInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	fired := make(chan struct{})
	restore := hook.Set(hook.LeaseHeartbeat, hook.Once(func(string) {
		stealLease(t, l.Path())
		close(fired)
	}))
	defer restore()
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("no heartbeat")
	}
	stolen := readFile(t, l.Path())
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if runtime.NumGoroutine() > base {
		t.Fatal("the heartbeat goroutine kept running after it found the lease lost")
	}
	if err := l.AssertOwned(); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("assert: %v", err)
	}
	if !bytes.Equal(readFile(t, l.Path()), stolen) {
		t.Fatal("the heartbeat renewed a record that is not ours")
	}
}

// A fence counter that cannot be read fails the acquisition closed: the
// token could not be proved greater than every earlier one. The lock file
// that was created is retracted.
func TestLeaseMalformedFenceCounterFailsClosed(t *testing.T) {
	dir := locksDir(t)
	os.WriteFile(filepath.Join(dir, "job.fence"), []byte("seven\n"), 0o600)
	_, err := AcquireLease(context.Background(), dir, "job", WaitBudget(0))
	if !errors.Is(err, ErrMalformedRecord) {
		t.Fatalf("acquire with a malformed counter: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "job.lock")); !os.IsNotExist(err) {
		t.Fatalf("the lock file was not retracted: %v", err)
	}
	if got := string(readFile(t, filepath.Join(dir, "job.fence"))); got != "seven\n" {
		t.Fatalf("counter rewritten: %q", got)
	}
}

// TestLeaseBusyNamesHolderPastARewrite: a holder's heartbeat rewrites its
// record in place, so a waiting acquirer's last look can land inside the
// rewrite (the record changed while read, or its bytes do not parse). The
// error that ends the wait still names the holder an earlier look read
// whole; on the old code it said only "the record was being rewritten"
// (a Wine-lane failure of TestWindowsLeaseCycle, which wants the holder's
// kernel lock named). A malformed record with no whole one before it is
// reported as malformed.
func TestLeaseBusyNamesHolderPastARewrite(t *testing.T) {
	now := time.Now().UnixMilli()
	rec := LeaseRecord{AttemptID: "0123456789abcdef", Pid: 4242, BootID: "a-boot", ProcessStartID: "p",
		CreatedAt: now, HeartbeatAt: now, LeaseExpiresAt: now + 60_000}
	whole := liveness.Captured{Data: rec.Marshal(), ID: exactfs.Identity{Size: 1, Nlink: 1, MtimeNs: time.Now().UnixNano()}}
	torn := liveness.Captured{Data: []byte(`{"attemptId":"0123`), ID: exactfs.Identity{Size: 18, Nlink: 1, MtimeNs: time.Now().UnixNano()}}
	cfg := defaultLeaseConfig()

	a := &acquirer{cfg: cfg, path: "locks/job.lock", start: time.Now()}
	if v := a.judgeCaptured(torn); v.Verdict != liveness.Unknown || !strings.Contains(a.holder, "malformed") {
		t.Fatalf("a torn record with nothing whole before it: %v, holder %q", v, a.holder)
	}
	for _, last := range []func(){
		func() { a.judgeCaptured(torn) },
		func() { a.holder = a.midRewrite("the record was being rewritten") }, // attempt's changed-during-read
	} {
		a.judgeCaptured(whole)
		last()
		err := a.fail(CodeLeaseBusy, nil, "not acquired")
		if CodeOf(err) != CodeLeaseBusy || !strings.Contains(err.Error(), "held by pid 4242") ||
			!strings.Contains(err.Error(), "mid-rewrite") {
			t.Fatalf("the wait's error after a look mid-rewrite: %v, want it to name pid 4242 and the rewrite", err)
		}
	}
}
