//go:build exactfs_portable

package statelock

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
)

// quarantined lists the lock quarantine names in e's directory: where the
// short staging of create_other.go leaves a killed creator's record.
func quarantined(t *testing.T, e *testEnv) []string {
	t.Helper()
	ents, err := os.ReadDir(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, en := range ents {
		if strings.HasPrefix(en.Name(), exactfs.LockQuarantinePrefix) && strings.HasSuffix(en.Name(), ".json") {
			out = append(out, filepath.Join(e.dir, en.Name()))
		}
	}
	return out
}

// TestNoEmptyRecordWithoutLeaseProbe (issue 24, the Mac strand): where no
// lease probe can prove an empty record abandoned (macOS, the BSDs; here
// the portable build), a record whose ordinary staging name is too long
// (beside a state file name of 205 bytes, for F.lock and its sidecar) is
// written whole under a short private name and published, so a creator
// SIGKILLed between the create and the write (hook LockOwnerRecordWrite)
// leaves no empty record at the name. Its staged file is residue that
// names no lock: the next lock call is not blocked by it, and Recover
// removes it once it is old. On the code before create_other.go both
// records were created in place: the kill left an empty F.lock (or
// sidecar) that every contender and recover kept (exit 75) until a person
// removed it, so the first assertion failed. A record of an ordinary name
// was already staged under its own staging name (publishRecord); the same
// kill there leaves no record either ("F.lock, short name").
func TestNoEmptyRecordWithoutLeaseProbe(t *testing.T) {
	t.Run("F.lock, short name", func(t *testing.T) {
		e := newEnv(t)
		runKilledAt(t, e, "killat", hook.LockOwnerRecordWrite, "STATELOCK_KILL_IN=lock")
		for _, p := range []string{e.lock, e.sidecar} {
			if fi, err := os.Lstat(p); err == nil {
				t.Fatalf("the killed creator left %s (%d bytes) at its name", p, fi.Size())
			}
		}
		old := time.Now().Add(-time.Minute)
		os.Chtimes(e.claim, old, old)
		acts, err := Recover(e.state, false, e.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range acts {
			t.Log(a.Kind, a.Done, ": ", a.Evidence)
		}
		h, err := TryLock(e.state, e.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		h.Unlock()
	})
	for _, which := range []string{"sidecar", "F.lock"} {
		t.Run(which, func(t *testing.T) {
			e := envNamed(t, 205)
			target := e.sidecar
			if which == "F.lock" {
				h, err := Lock(context.Background(), e.state, e.opts()...)
				if err != nil {
					t.Fatal(err)
				}
				if err := h.Unlock(); err != nil {
					t.Fatal(err)
				}
				if err := os.Remove(e.lock); err != nil {
					t.Fatal(err)
				}
				target = e.lock
			}
			runKilledAt(t, e, "killat", hook.LockOwnerRecordWrite, "STATELOCK_KILL_IN=lock")
			if fi, err := os.Lstat(target); err == nil {
				t.Fatalf("the killed creator left %s (%d bytes) at its name", target, fi.Size())
			}
			left := quarantined(t, e)
			if len(left) != 1 {
				t.Fatalf("want the killed creator's staged record as the one residue, got %v", left)
			}
			if fi, _ := os.Lstat(left[0]); fi == nil || fi.Size() != 0 {
				t.Fatalf("the staged record is not the empty one the kill left: %v", fi)
			}
			old := time.Now().Add(-time.Minute)
			os.Chtimes(e.claim, old, old)
			if which == "F.lock" {
				// The claim's sidecar names the killed worker: a stale
				// claim, and then a free lock. Nothing waits for a person.
				os.Chtimes(e.sidecar, old, old)
				h, err := Lock(context.Background(), e.state, e.opts(WithWait(5*time.Second))...)
				if err != nil {
					t.Fatalf("Lock after the kill: %v", err)
				}
				if err := h.Unlock(); err != nil {
					t.Fatal(err)
				}
			}
			// Recover removes the staged record once it is old (and, for the
			// sidecar, the claim directory the killed taker left without
			// one), with no judgement a person must make: no keep-*.
			older := time.Now().Add(-RecoverResidueAge - time.Minute)
			os.Chtimes(left[0], older, older)
			acts, err := Recover(e.state, false, e.opts()...)
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[string]bool{}
			for _, a := range acts {
				if !a.Done || strings.HasPrefix(a.Kind, "keep-") {
					t.Errorf("Recover: %+v", a)
				}
				kinds[a.Kind] = true
				t.Log(a.Kind, ": ", a.Evidence)
			}
			if !kinds["remove-quarantine"] || (which == "sidecar" && !kinds["remove-claim"]) {
				t.Fatalf("Recover did not remove what the kill left: %+v", acts)
			}
			if q := quarantined(t, e); len(q) != 0 {
				t.Fatalf("residue left after Recover: %v", q)
			}
			h, err := TryLock(e.state, e.opts()...)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.Unlock(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
