package statelock

import (
	"os"
	"strings"
	"testing"
	"time"
)

// unknownKernel makes the kernel's answers about e's files unknown, as on
// macOS: no OFD lock answer and, with writer, no lease probe either.
func unknownKernel(t *testing.T, writer bool) {
	t.Helper()
	ofdUnknown, writerUnknown = true, writer
	t.Cleanup(func() { ofdUnknown, writerUnknown = false, false })
}

func age1m(t *testing.T, paths ...string) {
	t.Helper()
	old := time.Now().Add(-time.Minute)
	for _, p := range paths {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
}

func mustExist(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); err != nil {
		t.Errorf("%s was removed: %v", p, err)
	}
}

// checkKept asserts that Recover (a dry run and a real one) kept what it
// could not judge, reported it as kind, and said how to remove it by hand.
func checkKept(t *testing.T, e *testEnv, kind, path, byHand string) {
	t.Helper()
	for _, dry := range []bool{true, false} {
		acts, err := Recover(e.state, dry, e.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		if len(acts) != 1 || acts[0].Kind != kind || acts[0].Path != path || acts[0].Done || acts[0].Err != nil ||
			!strings.Contains(acts[0].Evidence, "kept: ") || !strings.Contains(acts[0].Evidence, byHand) {
			t.Fatalf("dry run %v: want one %s of %s saying how to remove it by hand (%q), got %+v", dry, kind, path, byHand, acts)
		}
		t.Log(acts[0].Evidence)
	}
	mustExist(t, path)
}

// TestRecoverKeepsUnknownLock: where the kernel cannot tell whether a
// process holds a lock on a torn F.lock, Recover removes it only when the
// kernel proved that no process has it open for writing, and never says
// "no kernel lock" then; otherwise it keeps it and says so. On 20b7f43 the
// unknown answer read as "no lock": both kept cases were removed, and the
// removal's evidence said "no kernel lock on it".
func TestRecoverKeepsUnknownLock(t *testing.T) {
	torn := []byte(`{"pid":12`)
	t.Run("nothing known", func(t *testing.T) {
		e := newEnv(t)
		writeRecord(t, e.lock, torn)
		age1m(t, e.lock)
		unknownKernel(t, true)
		checkKept(t, e, KindKeepLock, e.lock, "rm "+e.lock)
	})
	t.Run("open for writing", func(t *testing.T) {
		e := newEnv(t)
		writeRecord(t, e.lock, torn)
		w, err := os.OpenFile(e.lock, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		age1m(t, e.lock)
		unknownKernel(t, false)
		checkKept(t, e, KindKeepLock, e.lock, "rm "+e.lock)
	})
	t.Run("no writer", func(t *testing.T) {
		e := newEnv(t)
		writeRecord(t, e.lock, torn)
		age1m(t, e.lock)
		unknownKernel(t, false)
		acts, err := Recover(e.state, false, e.opts()...)
		if err != nil || len(acts) != 1 || acts[0].Kind != "remove-lock" || !acts[0].Done {
			t.Fatalf("Recover: %+v %v", acts, err)
		}
		if ev := acts[0].Evidence; strings.Contains(ev, "no kernel lock") || !strings.Contains(ev, "open for writing by no process") {
			t.Errorf("evidence without a kernel's answer about locks: %q", ev)
		}
		if _, err := os.Lstat(e.lock); !os.IsNotExist(err) {
			t.Errorf("F.lock is still there: %v", err)
		}
	})
}

// TestRecoverKeepsUnknownClaim: the same for a crashed transition claim
// with a torn sidecar. On 20b7f43 the unknown writer kept it silently (no
// Action: nothing told the user why it stayed or what to do).
func TestRecoverKeepsUnknownClaim(t *testing.T) {
	plant := func(t *testing.T, e *testEnv) {
		if err := os.Mkdir(e.claim, 0o700); err != nil {
			t.Fatal(err)
		}
		writeRecord(t, e.sidecar, []byte(`{"pid":12`))
		age1m(t, e.claim, e.sidecar)
	}
	t.Run("nothing known", func(t *testing.T) {
		e := newEnv(t)
		plant(t, e)
		unknownKernel(t, true)
		checkKept(t, e, KindKeepClaim, e.claim, "rmdir "+e.claim+" && rm "+e.sidecar)
		mustExist(t, e.sidecar)
	})
	t.Run("no writer", func(t *testing.T) {
		e := newEnv(t)
		plant(t, e)
		unknownKernel(t, false)
		// The abandoned-write rule (judgeMalformed) calls this sidecar's
		// writer dead by itself, so the claim goes as a stale one.
		acts, err := Recover(e.state, false, e.opts()...)
		if err != nil || len(acts) == 0 || acts[0].Kind != "remove-claim" || !acts[0].Done {
			t.Fatalf("Recover: %+v %v", acts, err)
		}
		if ev := acts[0].Evidence; strings.Contains(ev, "no kernel lock") || !strings.Contains(ev, "open for writing by no process") {
			t.Errorf("evidence without a kernel's answer about locks: %q", ev)
		}
		// (The sidecar stays as a tombstone: reclaimStaleClaim.)
		if _, err := os.Lstat(e.claim); !os.IsNotExist(err) {
			t.Errorf("the claim is still there: %v", err)
		}
	})
}
