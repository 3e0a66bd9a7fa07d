package liveness

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/sys"
)

func init() {
	helpers["attest-hold"] = func() int {
		f, err := os.OpenFile(os.Getenv("LIVENESS_RECORD"), os.O_RDWR, 0)
		if err != nil {
			return 3
		}
		restore := sys.OpenGateForTest()
		defer restore()
		if !HoldAttestation(f) {
			return 4
		}
		if err := os.WriteFile(os.Getenv("LIVENESS_READY"), nil, 0o600); err != nil {
			return 5
		}
		time.Sleep(time.Hour)
		return 0
	}
}

// TestWindowsAttestationBeyondTheRecord: on Windows the holder's
// attestation (LockFileEx) lies beyond any record's bytes, so another
// handle still reads and the record stays readable to every reader,
// TypeScript peers included; another handle (here of the same process,
// which Windows treats like another process's) sees it held, and sees it
// gone once the holder's handle is closed. On the old code the lock
// covered [0, 2^40) (the read failed with a lock violation) and Attested
// could not answer (no F_GETLK).
func TestWindowsAttestationBeyondTheRecord(t *testing.T) {
	defer sys.OpenGateForTest()()
	p := filepath.Join(t.TempDir(), "rec.lock")
	record := []byte(`{"attemptId":"a","pid":1}` + "\n")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	holder, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if !HoldAttestation(holder) {
		t.Fatal("HoldAttestation failed on a regular file")
	}
	if _, err := holder.WriteAt(record, 0); err != nil {
		t.Fatalf("the holder's write of its record: %v", err)
	}
	reader, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	got := make([]byte, len(record))
	if _, err := reader.ReadAt(got, 0); err != nil || string(got) != string(record) {
		t.Fatalf("another handle's read of the record: %q, %v; the attestation must not cover the record's bytes", got, err)
	}
	for i := range 2 { // the probe leaves nothing behind: ask twice
		j, ok := Attested(reader)
		if !ok || j.Verdict != Alive {
			t.Fatalf("Attested (ask %d) while the holder's handle is open: %v %v, want Alive", i+1, j, ok)
		}
	}
	holder.Close()
	j, ok := Attested(reader)
	if !ok || j.Verdict != Dead {
		t.Fatalf("Attested after the holder's handle closed: %v %v, want Dead", j, ok)
	}
	// The probe took and released its byte: a new holder can lock.
	again, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if !HoldAttestation(again) {
		t.Fatal("HoldAttestation after a probe found the range free: the probe kept its byte")
	}
}

// TestWindowsAttestationOfTerminatedProcess: a child process holds the
// attestation; it reads Alive here; TerminateProcess kills it and the
// kernel releases its lock, so it reads Dead, at once, without waiting for
// any expiry. With the gate shut (every program today) nothing is
// claimed: HoldAttestation is false, Attested does not answer.
func TestWindowsAttestationOfTerminatedProcess(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "rec.lock")
	if err := os.WriteFile(p, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(dir, "ready")
	cmd := helperCommand(t, "attest-hold", "LIVENESS_RECORD="+p, "LIVENESS_READY="+ready)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the holder exited before it was ready: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the holder was not ready after a minute")
		}
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if j, ok := Attested(f); ok {
		t.Fatalf("Attested answered with the gate shut: %v", j)
	}
	defer sys.OpenGateForTest()()
	if j, ok := Attested(f); !ok || j.Verdict != Alive {
		t.Fatalf("Attested while the holder lives: %v %v, want Alive", j, ok)
	}
	if err := cmd.Process.Kill(); err != nil { // TerminateProcess
		t.Fatal(err)
	}
	<-exited
	exited <- nil // for the cleanup
	// The kernel releases a dead handle's locks as it closes it: soon,
	// but not necessarily before the wait returns.
	var j Judgement
	var ok bool
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if j, ok = Attested(f); ok && j.Verdict == Dead {
			return
		}
	}
	t.Fatalf("Attested after TerminateProcess: %v %v, want Dead within 10 s", j, ok)
}
