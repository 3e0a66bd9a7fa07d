//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func statusOf(t *testing.T, dir, stateFile string) statusJSON {
	t.Helper()
	return statusExiting(t, dir, stateFile, 0)
}

// statusExiting is statusOf for a status that exits with want.
func statusExiting(t *testing.T, dir, stateFile string, want int) statusJSON {
	t.Helper()
	r := runIn(t, dir, quick, "", "status", "--json", stateFile)
	expectCode(t, r, want, "status --json")
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

// TestRecoverCrashedClaim plants a transition claim whose sidecar is empty.
// While a process still has the sidecar open for writing (its taker, between
// creating and writing it), neither the automatic reclaim nor recover touch
// the claim, however old it looks. Once that writer is gone (killed), the
// empty sidecar is an abandoned write: recover removes exactly that claim,
// and the lock works again.
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
	writer := holdOpenForWriting(t, side)
	old := time.Now().Add(-time.Minute)
	os.Chtimes(side, old, old)
	os.Chtimes(claim, old, old)

	_, abandons := kernelTells(t)
	if !abandons {
		// Without the lease probe (macOS, the BSDs, the portable build)
		// nothing tells a writer alive from one gone: recover keeps the
		// claim whichever it is, exits 75, and says how to remove it by
		// hand; once a person has, the lock works.
		for _, alive := range []bool{true, false} {
			if !alive {
				writer()
			}
			r := runIn(t, dir, quick, "", "recover", "s")
			expectCode(t, r, exitBusy, fmt.Sprintf("recover of a claim nothing proves abandoned (writer alive: %v)", alive))
			if !strings.Contains(r.stdout, "keep claim s.lock.transition") || !strings.Contains(r.stdout, "kept: ") ||
				!strings.Contains(r.stdout, "rmdir s.lock.transition && rm s.lock.transition.owner") {
				t.Fatalf("recover does not say why it keeps the claim and how to remove it:\n%s", r.stdout)
			}
			if _, err := os.Lstat(claim); err != nil {
				t.Fatalf("recover removed a claim nothing proves abandoned: %v", err)
			}
		}
		os.Remove(claim)
		os.Remove(side)
		expectCode(t, runIn(t, dir, quick, "", "update", "--try", "s", "--", "echo", "2"), 0, "update after the removal by hand")
		return
	}

	r := runIn(t, dir, quick, "", "recover", "s")
	expectCode(t, r, 0, "recover of a claim whose sidecar is still being written")
	if strings.Contains(r.stdout, "remove claim") {
		t.Fatalf("recover removed a claim whose sidecar a live process is writing:\n%s", r.stdout)
	}
	expectCode(t, runIn(t, dir, quick, "", "lock", "--timeout", "300ms", "s", "--", "true"), exitBusy, "lock with the claim's writer alive")
	if _, err := os.Lstat(claim); err != nil {
		t.Fatalf("the claim of a live writer was removed: %v", err)
	}
	writer()

	// Its writer gone, the empty sidecar is an abandoned write, which the
	// next lock call reclaims: "stale" in status's words.
	if st := statusOf(t, dir, "s"); st.Claim.State != "stale" {
		t.Fatalf("status of the abandoned claim: %+v", st.Claim)
	}
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
	// Unreadable is described, and exits 74 as status's help says.
	if st := statusExiting(t, dir, "s", exitIO); st.Lock != "unreadable" {
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
	ofd, writer := kernelTells(t)
	r := runIn(t, dir, quick, "", "recover", "s")
	if !ofd && !writer {
		// Where the kernel answers neither (macOS, the BSDs, the portable
		// build), nothing proves its writer gone: recover keeps it, exits
		// 75, and says how to remove it by hand; then the lock works.
		expectCode(t, r, exitBusy, "recover of an empty record nothing proves abandoned")
		if !strings.Contains(r.stdout, "keep lock s.lock") || !strings.Contains(r.stdout, "kept: ") || !strings.Contains(r.stdout, "rm s.lock") {
			t.Fatalf("recover does not say why it keeps the record and how to remove it:\n%s", r.stdout)
		}
		if _, err := os.Lstat(lock); err != nil {
			t.Fatalf("recover removed an empty record nothing proves abandoned: %v", err)
		}
		os.Remove(lock)
		expectCode(t, runIn(t, dir, quick, "", "lock", "--try", "s", "--", "true"), 0, "lock after the removal by hand")
		return
	}
	expectCode(t, r, 0, "recover")
	// The evidence is the kernel's answer it had: no OFD lock on it, or
	// (without OFD locks) no process with it open for writing.
	if ev := "no kernel lock"; !ofd {
		ev = "open for writing by no process"
		if !strings.Contains(r.stdout, ev) || strings.Contains(r.stdout, "no kernel lock") {
			t.Fatalf("recover does not give its evidence:\n%s", r.stdout)
		}
	} else if !strings.Contains(r.stdout, ev) {
		t.Fatalf("recover does not give its evidence:\n%s", r.stdout)
	}
	if _, err := os.Lstat(lock); !os.IsNotExist(err) {
		t.Fatalf("the old empty record is still there after recover:\n%s", r.stdout)
	}
	expectCode(t, runIn(t, dir, quick, "", "lock", "--try", "s", "--", "true"), 0, "lock after recover")
}

// holdOpenForWriting keeps path open for writing in a child process, as a
// writer still writing it would, until the returned function kills it.
func holdOpenForWriting(t *testing.T, path string) (kill func()) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "60")
	cmd.ExtraFiles = []*os.File{f}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	done := false
	kill = func() {
		if !done {
			done = true
			cmd.Process.Kill()
			cmd.Wait()
		}
	}
	t.Cleanup(kill)
	return kill
}
