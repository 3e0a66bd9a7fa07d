package statelock

import (
	"context"
	"os"
	"strings"
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
