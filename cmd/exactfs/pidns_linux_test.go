package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/sys"
	"github.com/exactfs/exactfs/internal/testfs"
)

// requirePidNamespace skips (fails in CI) unless unshare can start a
// process in a new pid namespace here.
func requirePidNamespace(t *testing.T) {
	t.Helper()
	testfs.RequireCommand(t, "unshare")
	out, err := exec.Command("unshare", "--pid", "--fork", "true").CombinedOutput()
	testfs.Require(t, "a new pid namespace (unshare --pid --fork)", err == nil, strings.TrimSpace(string(out))+" "+errText(err))
}

// TestLockInPidNamespaceOnTerminal runs "exactfs lock" under "unshare --pid
// --fork" as the foreground job of a terminal, with a CMD that reads a line
// from it. There exactfs's process group leader (unshare) is outside its pid
// namespace, so getpgrp(2) answers 0 and the guard cannot name exactfs's
// group to put CMD back in it: CMD stayed in the guard's own group, a
// background group of the terminal, and was stopped by SIGTTIN as it read
// (on the code before the fix this test times out with CMD in state T).
func TestLockInPidNamespaceOnTerminal(t *testing.T) {
	requirePidNamespace(t)
	dir := t.TempDir()
	j := startOnTerminal(t, dir, "unshare", "--pid", "--fork", exactfsBin, "lock", "state.json", "--",
		"sh", "-c", `echo ready; read line; echo "got:$line"`)
	j.waitOutput(t, "ready", 15*time.Second)
	if _, err := j.ptmx.Write([]byte("typed\n")); err != nil {
		t.Fatal(err)
	}
	if code := j.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("exit %d, want 0; terminal output %q", code, j.output())
	}
	j.waitOutput(t, "got:typed", 5*time.Second)
	expectCode(t, runIn(t, dir, quick, "", "lock", "--try", "state.json", "--", "true"), 0, "lock --try afterwards")
}

// TestLockKilledInPidNamespaceWithoutItsProc SIGKILLs "exactfs lock" run
// in a new pid namespace that has no /proc of its own (unshare --pid --fork
// without --mount-proc: /proc is still the parent namespace's, where every
// pid has another number), while CMD's children work. The guard must still
// find and kill them before the lock can be taken over: on the code before
// the fix its /proc walk started from its own pid in its namespace, which in
// that /proc is some unrelated process, found nothing, and the children went
// on, unlocked, under a guard that waited for them.
func TestLockKilledInPidNamespaceWithoutItsProc(t *testing.T) {
	requirePidNamespace(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "marker")
	ready := filepath.Join(dir, "ready")
	// The marker reaches the workers' argv through the environment, so
	// that no shell's command line holds it.
	worker := workerCmd(t, "sleep") + ` "$EXACTFS_TEST_MARKER"`
	// sh stays the namespace's init after exactfs is killed: the namespace
	// (and with it everything in it) would end with its init otherwise.
	holder := exec.Command("unshare", "--pid", "--fork", "sh", "-c",
		shellQuote(exactfsBin)+" lock state.json -- sh -c "+shellQuote(worker+" & "+worker+" & touch "+ready+"; wait")+"; sleep 60")
	holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	holder.Env = append(os.Environ(), "EXACTFS_TEST_MARKER="+marker)
	waited, stderr := startGuardedHolder(t, holder, dir)
	t.Cleanup(func() {
		syscall.Kill(-holder.Process.Pid, syscall.SIGKILL)
		for _, p := range liveWith(marker) {
			var pid int
			if _, err := fmt.Sscanf(p, "%d:", &pid); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for len(liveWith(marker)) < 2 || !exists(ready) {
		if time.Now().After(deadline) {
			t.Fatalf("CMD's workers never started\n%s", mustRead(t, stderr))
		}
		select {
		case <-waited:
			t.Fatalf("the holder exited early\n%s", mustRead(t, stderr))
		case <-time.After(10 * time.Millisecond):
		}
	}
	var exactfsPid int
	if live := liveWith(exactfsBin + "\x00lock\x00state.json\x00"); len(live) == 1 {
		fmt.Sscanf(live[0], "%d:", &exactfsPid)
	}
	if exactfsPid == 0 {
		t.Fatalf("exactfs lock not found in /proc\n%s", mustRead(t, stderr))
	}
	syscall.Kill(exactfsPid, syscall.SIGKILL)
	waitGone(t, marker, 10*time.Second)
	if sys.Portable {
		// A holder in another pid namespace is judged dead by its OFD
		// lock, which the portable build has not (see the portable lane's
		// skip of TestHolderInAnotherPidNamespace): there it is respected
		// until recovered, and the tree's end is what is proved here.
		return
	}
	expectCode(t, runIn(t, dir, quick, "", "lock", "--try", "state.json", "--", "true"), 0, "lock --try after the holder was killed")
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
