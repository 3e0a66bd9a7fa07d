package statelock

import (
	"context"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/internal/testfs"
)

// SPEC §4.3 (decided 2026-12-03): the reference takes a claim by mkdir and
// then fails outright on a sidecar that is not a tombstone, so a power cut
// must never leave "no claim directory, sidecar not a tombstone". The
// sidecar's tombstone is fsynced before the claim directory goes, in an
// ordinary release (releaseClaim) and in the reclaim of a crashed claim
// (entombSidecar). These tests cut the power (FS_IOC_SHUTDOWN without a log
// flush: what was not fsynced is lost) right after the tombstone was written
// and before the directory is removed, then mount again: the sidecar must
// be the tombstone. On 7b17545 it is the record the tombstone replaced.

// sidecarAfterRemount closes what this process holds on mnt, remounts it
// (replaying the journal as a reboot would) and returns the sidecar.
func sidecarAfterRemount(t *testing.T, e *testEnv, mnt string) *Record {
	t.Helper()
	closeParked()
	testfs.Remount(t, mnt)
	b := mustRead(t, e.sidecar)
	r, err := ParseRecord(b)
	if err != nil {
		t.Fatalf("the sidecar after the power cut does not parse (%v): %q", err, b)
	}
	return r
}

// TestClaimReleaseTombstoneDurable: an ordinary claim release. The
// sidecar holds our record, made durable (sync) to stand for a record
// flushed by write-back; the release writes the tombstone and the power is
// cut where the claim directory would go.
func TestClaimReleaseTombstoneDurable(t *testing.T) {
	mnt := testfs.LoopExt4(t, 16)
	e := faultEnv(t, mnt)
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	var synced, cut atomic.Int32
	defer hook.Set(hook.LockClaimRelease, func(string) {
		if cut.Load() == 0 {
			syscall.Sync() // our record in the sidecar is on disk
		}
	})()
	defer hook.Set(hook.LockClaimReleaseSynced, func(string) {
		synced.Add(1)
		if cut.Add(1) == 1 {
			testfs.Shutdown(t, mnt)
		}
	})()
	err = h.Unlock()
	t.Logf("Unlock across the power cut: %v", err)
	if synced.Load() == 0 {
		t.Fatal("the release never reached the point after the sidecar's fsync")
	}
	r := sidecarAfterRemount(t, e, mnt)
	if !r.Released {
		t.Fatalf("after a power cut between the claim release's tombstone and its rmdir the sidecar is %s, not a tombstone", r.Encode())
	}
	if fi, err := os.Lstat(e.claim); err != nil || !fi.IsDir() {
		t.Fatalf("the claim directory after the cut: %v %v", fi, err)
	}
	// And the lock heals: the claim with a tombstone sidecar is stale once
	// it is a second old.
	h, err = Lock(context.Background(), e.state, e.opts(WithWait(10*time.Second))...)
	if err != nil {
		t.Fatalf("Lock after the power cut: %v", err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// TestCrashedClaimTombstoneDurable: the reclaim of a crashed claim rewrites
// its dead sidecar to a tombstone; the power is cut right before the
// claim directory's removal.
func TestCrashedClaimTombstoneDurable(t *testing.T) {
	mnt := testfs.LoopExt4(t, 16)
	e := faultEnv(t, mnt)
	if err := os.Mkdir(e.claim, 0o700); err != nil {
		t.Fatal(err)
	}
	dead := (&Record{Pid: 4242, StartTime: "1", Token: "t", HostID: e.host.ID}).Encode()
	if err := os.WriteFile(e.sidecar, dead, 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-5 * time.Second)
	os.Chtimes(e.sidecar, old, old)
	os.Chtimes(e.claim, old, old)
	syscall.Sync()
	var cut atomic.Int32
	defer hook.Set(hook.LockBeforeClaimRemoval, func(string) {
		if cut.Add(1) == 1 {
			testfs.Shutdown(t, mnt)
		}
	})()
	h, err := TryLock(e.state, e.opts(probeSays(syscall.ESRCH))...)
	t.Logf("TryLock across the power cut: %v", err)
	if err == nil {
		h.Unlock()
	}
	if cut.Load() == 0 {
		t.Fatal("the crashed claim was never removed")
	}
	r := sidecarAfterRemount(t, e, mnt)
	if !r.Released {
		t.Fatalf("after a power cut before the crashed claim's removal the sidecar is %s, not a tombstone", r.Encode())
	}
}
