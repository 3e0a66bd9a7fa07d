package main

import (
	"os/exec"
	"strings"
	"testing"
	"time"

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
