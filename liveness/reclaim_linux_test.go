package liveness

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/exactfs/exactfs"
)

// The attestation: a lock held through one open file description reads as
// Alive through another, on the same inode; once its descriptor is closed
// (as the kernel closes a killed holder's), Dead.
func TestAttestedFollowsTheHolderDescriptor(t *testing.T) {
	p := filepath.Join(t.TempDir(), "rec")
	holder, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if !HoldAttestation(holder) {
		t.Skip("this filesystem takes no OFD locks")
	}
	probe, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	if j, ok := Attested(probe); !ok || j.Verdict != Alive {
		t.Fatalf("while held: %v %v", j, ok)
	}
	holder.Close()
	if j, ok := Attested(probe); !ok || j.Verdict != Dead {
		t.Fatalf("after the holder's close: %v %v", j, ok)
	}
}

// Reclaim removes only on Dead, only the version it judged, and a
// successor that took the name after the judgement survives.
func TestReclaimJudgesThenRemovesExactly(t *testing.T) {
	dir := t.TempDir()
	d, err := exactfs.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	p := filepath.Join(dir, "rec")
	quarantine := func() string { return ".retire-" + exactfs.NewUUID() }
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	var seen string
	j, err := Reclaim(d, "rec", quarantine, func(c Captured) Judgement {
		seen = string(c.Data)
		return Judgement{Verdict: Unknown, Reason: "cannot tell"}
	})
	if err != nil || j.Verdict != Unknown || seen != "old" {
		t.Fatalf("kept: %v %v, judged %q", j, err, seen)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("a record judged unknown was touched: %v", err)
	}
	// A successor replaces the record between the judgement and the removal.
	_, err = Reclaim(d, "rec", quarantine, func(c Captured) Judgement {
		os.Remove(p)
		os.WriteFile(p, []byte("successor"), 0o600)
		return Judgement{Verdict: Dead, Reason: "test"}
	})
	if !errors.Is(err, exactfs.ErrIdentityMismatch) {
		t.Fatalf("removal after a successor took the name: %v, want identity mismatch", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "successor" {
		t.Fatalf("the successor's record holds %q", b)
	}
	j, err = Reclaim(d, "rec", quarantine, func(c Captured) Judgement { return Judgement{Verdict: Dead, Reason: "test"} })
	if err != nil || j.Verdict != Dead {
		t.Fatalf("reclaim: %v %v", j, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left %v", ents)
	}
	if _, err := Reclaim(d, "rec", quarantine, func(Captured) Judgement { t.Fatal("judged nothing"); return Judgement{} }); !errors.Is(err, exactfs.ErrNotFound) {
		t.Fatalf("nothing there: %v", err)
	}
}
