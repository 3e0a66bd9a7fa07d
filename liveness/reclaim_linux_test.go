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
	d, dir := recordDir(t)
	p := filepath.Join(dir, "rec")
	quarantine := retireName
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	var seen string
	j, err := Reclaim(d, "rec", Removal{Quarantine: quarantine}, func(c Captured) Judgement {
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
	_, err = Reclaim(d, "rec", Removal{Quarantine: quarantine}, func(c Captured) Judgement {
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
	j, err = Reclaim(d, "rec", Removal{Quarantine: quarantine}, func(c Captured) Judgement { return Judgement{Verdict: Dead, Reason: "test"} })
	if err != nil || j.Verdict != Dead {
		t.Fatalf("reclaim: %v %v", j, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left %v", ents)
	}
	if _, err := Reclaim(d, "rec", Removal{Quarantine: quarantine}, func(Captured) Judgement { t.Fatal("judged nothing"); return Judgement{} }); !errors.Is(err, exactfs.ErrNotFound) {
		t.Fatalf("nothing there: %v", err)
	}
}

// The removal captures the name again after the verdict: a record
// rewritten in place at the Judged window (same inode, other bytes) or
// replaced there is left alone, and Removing never runs for it.
func TestReclaimCapturesAgainAfterTheVerdict(t *testing.T) {
	d, dir := recordDir(t)
	p := filepath.Join(dir, "rec")
	dead := func(Captured) Judgement { return Judgement{Verdict: Dead, Reason: "test"} }
	for name, change := range map[string]func(){
		"rewritten in place": func() { os.WriteFile(p, []byte("successor"), 0o600) },
		"replaced":           func() { os.Remove(p); os.WriteFile(p, []byte("successor"), 0o600) },
	} {
		if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
		removing := false
		rm := Removal{Quarantine: retireName,
			Judged: change, Removing: func() { removing = true }}
		_, err := Reclaim(d, "rec", rm, dead)
		if !errors.Is(err, exactfs.ErrIdentityMismatch) || removing {
			t.Errorf("%s: %v (removing step ran: %v), want identity mismatch", name, err, removing)
		}
		if b, _ := os.ReadFile(p); string(b) != "successor" {
			t.Errorf("%s: the successor's record holds %q", name, b)
		}
	}
	steps := ""
	rm := Removal{Quarantine: retireName,
		Judged: func() { steps += "judged " }, Removing: func() { steps += "removing" }}
	if _, err := Reclaim(d, "rec", rm, dead); err != nil || steps != "judged removing" {
		t.Fatalf("reclaim: %v, steps %q", err, steps)
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the dead record is still there: %v", err)
	}
}

// recordDir is a fresh directory for a record, opened as a Dir (closed
// with the test).
func recordDir(t *testing.T) (*exactfs.Dir, string) {
	dir := t.TempDir()
	d, err := exactfs.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, dir
}

func retireName() string { return ".retire-" + exactfs.NewUUID() }
