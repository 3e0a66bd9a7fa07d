//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func statusOf(t *testing.T, dir, stateFile string) statusJSON {
	t.Helper()
	r := runIn(t, dir, quick, "", "status", "--json", stateFile)
	expectCode(t, r, 0, "status --json")
	var st statusJSON
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("status --json is not the documented object: %v\n%s", err, r.stdout)
	}
	return st
}

// TestStatusNamesLiveHolderThenDead: while a holder sleeps, status names its
// pid and says "alive"; after the holder is SIGKILLed and reaped, "dead".
func TestStatusNamesLiveHolderThenDead(t *testing.T) {
	dir := t.TempDir()
	if st := statusOf(t, dir, "state.json"); st.Lock != "free" || st.Holder != nil || st.Claim.State != "none" || st.Residue == nil {
		t.Fatalf("status before any lock: %+v", st)
	}
	h := startHolder(t, dir, "state.json", 60)
	st := statusOf(t, dir, "state.json")
	if st.Lock != "held" || st.Holder == nil || st.Holder.Pid != int64(h.cmd.Process.Pid) || st.Holder.Verdict != "alive" || !st.Holder.ThisHost {
		t.Fatalf("status while held by pid %d: %+v holder %+v", h.cmd.Process.Pid, st, st.Holder)
	}
	r := runIn(t, dir, quick, "", "status", "state.json")
	if !strings.Contains(r.stdout, "held by pid") || !strings.Contains(r.stdout, "alive") {
		t.Errorf("status text: %s", r.stdout)
	}

	h.cmd.Process.Signal(syscall.SIGKILL)
	<-h.done // reaped: the pid no longer exists
	h.done <- nil
	st = statusOf(t, dir, "state.json")
	if st.Lock != "stale" || st.Holder == nil || st.Holder.Pid != int64(h.cmd.Process.Pid) || st.Holder.Verdict != "dead" {
		t.Fatalf("status after SIGKILL: %+v holder %+v", st, st.Holder)
	}
	// The next caller reclaims it at once.
	r = runIn(t, dir, quick, "", "lock", "--try", "state.json", "--", "true")
	expectCode(t, r, 0, "lock --try over a dead holder")
	if st := statusOf(t, dir, "state.json"); st.Lock != "released" {
		t.Fatalf("after the reclaim: %+v", st)
	}
}

func TestStatusRefusesUnsafeLockPath(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "s.lock"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runIn(t, dir, quick, "", "status", "--json", "s")
	expectCode(t, r, exitUnsafe, "status with a FIFO at s.lock")
	var st statusJSON
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Lock != "unsafe" || !strings.Contains(st.Detail, "FIFO") {
		t.Fatalf("status of a FIFO lock path: %v %+v", err, st)
	}
}

// TestRecoverCrashedClaim plants a transition claim whose sidecar is empty
// and still open for writing (its taker stopped between creating and
// writing it; an empty sidecar nobody has open is reclaimed automatically,
// see statelock's judgeMalformed): automatic reclaim leaves it, recover
// removes exactly it, and the lock works again.
func TestRecoverCrashedClaim(t *testing.T) {
	dir := t.TempDir()
	expectCode(t, runIn(t, dir, quick, "", "update", "s", "--", "echo", "1"), 0, "update")
	claim, side := filepath.Join(dir, "s.lock.transition"), filepath.Join(dir, "s.lock.transition.owner")
	os.Remove(side)
	if err := os.Mkdir(claim, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(side, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(side, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// Young: recover leaves it alone.
	five := time.Now().Add(-5 * time.Second)
	os.Chtimes(side, five, five)
	os.Chtimes(claim, five, five)
	r := runIn(t, dir, quick, "", "recover", "s")
	expectCode(t, r, 0, "recover of a young crashed claim")
	if strings.Contains(r.stdout, "remove claim") {
		t.Fatalf("recover of a young claim: %s", r.stdout)
	}
	old := time.Now().Add(-time.Minute)
	os.Chtimes(side, old, old)
	os.Chtimes(claim, old, old)

	if st := statusOf(t, dir, "s"); st.Claim.State != "crashed" {
		t.Fatalf("status of the planted claim: %+v", st.Claim)
	}
	expectCode(t, runIn(t, dir, quick, "", "lock", "--timeout", "300ms", "s", "--", "true"), exitBusy, "lock with a crashed claim")

	r = runIn(t, dir, quick, "", "recover", "--dry-run", "s")
	expectCode(t, r, 0, "recover --dry-run")
	if !strings.Contains(r.stdout, "would remove claim") {
		t.Fatalf("recover --dry-run: %s", r.stdout)
	}
	if _, err := os.Stat(claim); err != nil {
		t.Fatal("recover --dry-run changed something")
	}
	r = runIn(t, dir, quick, "", "recover", "s")
	expectCode(t, r, 0, "recover")
	if _, err := os.Lstat(claim); !os.IsNotExist(err) {
		t.Fatalf("the crashed claim is still there: %s", r.stdout)
	}
	expectCode(t, runIn(t, dir, quick, "", "update", "--try", "s", "--", "echo", "2"), 0, "update after recover")
	if got := mustRead(t, filepath.Join(dir, "s")); got != "2\n" {
		t.Fatalf("state after recover: %q", got)
	}

	// A claim directory that is not empty is never removed.
	os.Mkdir(claim, 0o700)
	os.WriteFile(filepath.Join(claim, "someone's file"), []byte("x"), 0o600)
	os.Remove(side)
	os.Chtimes(claim, old, old)
	r = runIn(t, dir, quick, "", "recover", "s")
	if _, err := os.Stat(filepath.Join(claim, "someone's file")); err != nil {
		t.Fatalf("recover removed a non-empty claim directory: %s", r.stdout)
	}
}

// TestRecoverPrintsExactRemovalForUnreadableLock: an empty F.lock (a writer
// killed between creating and writing it) is never reclaimed automatically;
// recover prints the exact removal, and running it frees the lock.
func TestRecoverPrintsExactRemovalForUnreadableLock(t *testing.T) {
	// A fresh unreadable record may be a peer's still being written: recover
	// leaves it and prints the exact removal for a person who knows better.
	dir := t.TempDir()
	lock := filepath.Join(dir, "s.lock")
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if st := statusOf(t, dir, "s"); st.Lock != "unreadable" {
		t.Fatalf("status of an empty lock record: %+v", st)
	}
	r := runIn(t, dir, quick, "", "recover", "s")
	expectCode(t, r, 0, "recover")
	i := strings.Index(r.stdout, "exactfs rm --expect ")
	if i < 0 {
		t.Fatalf("recover does not print the exact removal:\n%s", r.stdout)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatal("recover removed a fresh unreadable lock record by itself")
	}
	args := strings.Fields(strings.SplitN(r.stdout[i:], "\n", 2)[0])[1:]
	expectCode(t, runIn(t, dir, quick, "", args...), 0, strings.Join(args, " "))
	expectCode(t, runIn(t, dir, quick, "", "lock", "--try", "s", "--", "true"), 0, "lock after the removal")
}

func TestRecoverRemovesOldEmptyLockRecord(t *testing.T) {
	// An empty record a minute old on which no process holds a kernel lock
	// was left by a writer killed between create and write: recover removes
	// exactly it (statelock.Recover), saying why.
	dir := t.TempDir()
	lock := filepath.Join(dir, "s.lock")
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute)
	os.Chtimes(lock, old, old)
	dry := runIn(t, dir, quick, "", "recover", "--dry-run", "s")
	expectCode(t, dry, 0, "recover --dry-run")
	if _, err := os.Stat(lock); err != nil {
		t.Fatal("recover --dry-run removed the record")
	}
	r := runIn(t, dir, quick, "", "recover", "s")
	expectCode(t, r, 0, "recover")
	if !strings.Contains(r.stdout, "no kernel lock") {
		t.Fatalf("recover does not give its evidence:\n%s", r.stdout)
	}
	if _, err := os.Lstat(lock); !os.IsNotExist(err) {
		t.Fatalf("the old empty record is still there after recover:\n%s", r.stdout)
	}
	expectCode(t, runIn(t, dir, quick, "", "lock", "--try", "s", "--", "true"), 0, "lock after recover")
}
