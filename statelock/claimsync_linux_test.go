package statelock

import (
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
// reclaim of a crashed claim (entombSidecar) fsyncs the sidecar's tombstone
// before the claim directory is removed. The test cuts the power
// (FS_IOC_SHUTDOWN without a log flush: what was not fsynced is lost) right
// before the removal, then mounts again: the sidecar must be the tombstone.
// On 7b17545 it is the dead record the tombstone replaced.

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
