//go:build !exactfs_portable

package statelock

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
)

// SPEC §4.8.4: a claim's taker that holds its kernel lock on the sidecar
// leaves the sidecar the tombstone it found. So the sidecar is never
// anything but a tombstone in the steady state, and no order of
// write-back after a power cut can leave "no claim directory, sidecar not
// a tombstone" (§4.3). On the old code the sidecar held the taker's record
// for the whole claim.

// TestClaimKeepsSidecarTombstone: inside the release's claim (the second
// claim of a cycle, the sidecar reused), the sidecar is a tombstone, our
// kernel lock on it is held, and a reclaimer that finds the claim aged
// past every age rule reads it as held, not crashed.
func TestClaimKeepsSidecarTombstone(t *testing.T) {
	e := newEnv(t)
	// A first cycle creates the sidecar (our record, then its tombstone).
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	synced := 0
	defer hook.Set(hook.LockClaimSidecarSync, func(string) { synced++ })()
	var inside []string
	defer hook.Set(hook.LockBeforeRelease, func(string) {
		b, err := os.ReadFile(e.sidecar)
		if err != nil {
			inside = append(inside, "sidecar unreadable: "+err.Error())
			return
		}
		if r, err := ParseRecord(b); err != nil || !r.Released {
			inside = append(inside, "the sidecar is not a tombstone during the claim: "+string(b))
		}
		f, err := os.Open(e.sidecar)
		if err != nil {
			inside = append(inside, err.Error())
			return
		}
		held, known := ofdHeld(f)
		f.Close()
		if !known || !held {
			inside = append(inside, "no kernel lock on the sidecar during the claim")
		}
		old := time.Now().Add(-5 * time.Second)
		os.Chtimes(e.claim, old, old)
		os.Chtimes(e.sidecar, old, old)
		other, err := newLocker(e.state, e.opts())
		if err != nil {
			inside = append(inside, err.Error())
			return
		}
		defer other.close()
		if st := other.inspectClaim(); st.stale || !strings.HasPrefix(st.why, "held") {
			inside = append(inside, "an aged claim with a tombstone sidecar and our lock: stale "+boolString(st.stale)+", "+st.why)
		}
	})()
	h, err = Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	if len(inside) != 0 {
		t.Fatal(strings.Join(inside, "\n"))
	}
	if synced != 0 {
		t.Fatalf("the steady state wrote and fsynced the sidecar %d times", synced)
	}
	assertSteadyState(t, e, true)
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// TestClaimFirstSidecarSynced: where our record is written into the
// sidecar (its first take: it does not exist yet), the tombstone that
// replaces it is fsynced before the claim directory goes.
func TestClaimFirstSidecarSynced(t *testing.T) {
	e := newEnv(t)
	var seen []string
	defer hook.Set(hook.LockClaimSidecarSync, func(string) {
		_, derr := os.Lstat(e.claim)
		b, _ := os.ReadFile(e.sidecar)
		r, err := ParseRecord(b)
		if derr != nil || err != nil || !r.Released {
			seen = append(seen, "before the sync: claim "+errString(derr)+", sidecar "+string(b))
		}
		seen = append(seen, "sync")
	})()
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != "sync" {
		t.Fatalf("first take: %q, want one sync with the tombstone written and the claim directory present", seen)
	}
	assertSteadyState(t, e, true)
}

func errString(err error) string {
	if err == nil {
		return "present"
	}
	return err.Error()
}

// TestClaimKeptTakerKilled: a taker SIGKILLed inside its claim leaves the
// claim directory and the untouched tombstone sidecar, with no kernel
// lock: the crashed-claim rule reclaims it (a tombstone sidecar a second
// old), and the next Lock succeeds.
func TestClaimKeptTakerKilled(t *testing.T) {
	e := newEnv(t)
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	closeParked()
	runKilledAt(t, e, "killat", hook.LockBeforeRelease, "STATELOCK_KILL_IN=unlock")
	if _, err := os.Lstat(e.claim); err != nil {
		t.Fatalf("the killed taker left no claim: %v", err)
	}
	if r, err := ParseRecord(mustRead(t, e.sidecar)); err != nil || !r.Released {
		t.Fatalf("the killed taker's sidecar: %v %v, want the tombstone it found", r, err)
	}
	h, err = Lock(context.Background(), e.state, e.opts(WithWait(20*time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	assertSteadyState(t, e, true)
}

// TestClaimDirSyncedBeforeSidecarRecord: SPEC §4.3 on the take side. When
// our record is written into the sidecar (here its first take), the claim
// directory is made durable first: at the moment of the fsync the
// directory exists and no byte of ours is in the sidecar. Were the record
// written first, a power cut could keep it and lose the mkdir, leaving
// "no claim directory, sidecar not a tombstone", on which the reference
// fails every call. The fault variant proves the order: when the fsync
// fails, nothing of ours was written, the claim is given back, and the
// error says what failed. In the steady state (the sidecar a tombstone
// kept under our kernel lock) nothing is written, so nothing is synced.
func TestClaimDirSyncedBeforeSidecarRecord(t *testing.T) {
	e := newEnv(t)
	var seen []string
	restore := hook.Set(hook.LockClaimDirSync, func(string) {
		_, derr := os.Lstat(e.claim)
		_, serr := os.Lstat(e.sidecar)
		seen = append(seen, "claim "+errString(derr)+", sidecar "+errString(serr))
	})
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || !strings.HasPrefix(seen[0], "claim present, sidecar ") || strings.HasSuffix(seen[0], "sidecar present") {
		t.Fatalf("first take: %q, want one sync with the claim directory present and no sidecar yet", seen)
	}
	seen = nil
	for i := 0; i < 3; i++ {
		h, err := Lock(context.Background(), e.state, e.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Unlock(); err != nil {
			t.Fatal(err)
		}
	}
	restore()
	if len(seen) != 0 {
		t.Fatalf("the steady state synced the claim's directory: %q", seen)
	}

	// The fault variant, on a fresh lock whose sidecar does not exist yet.
	e = newEnv(t)
	f := func(point, path string) error {
		if point == hook.LockClaimDirSync {
			return syscall.EIO
		}
		return nil
	}
	faultAt.Store(&f)
	_, err = Lock(context.Background(), e.state, e.opts()...)
	faultAt.Store(nil)
	if err == nil || !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "durable before its sidecar is written") {
		t.Fatalf("Lock with the claim directory's fsync failing: %v", err)
	}
	if b, err := os.ReadFile(e.sidecar); err == nil {
		if r, perr := ParseRecord(b); perr != nil || !r.Released {
			t.Fatalf("the sidecar holds bytes written before the claim directory was durable: %q", b)
		}
	}
	if _, err := os.Lstat(e.claim); !os.IsNotExist(err) {
		t.Fatalf("the claim directory was not given back: %v", err)
	}
	h, err = Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	assertSteadyState(t, e, true)
}
