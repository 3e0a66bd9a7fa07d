package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// The Job object of lock and update on Windows (guard_windows.go), tested
// with real processes: this test binary plays exactfs ("holder"), CMD
// ("tree", which starts a grandchild and writes both pids) and the
// grandchild ("sleep"), chosen by jobRoleEnv in TestMain.
const (
	jobRoleEnv = "EXACTFS_TEST_JOB_ROLE"
	jobOutEnv  = "EXACTFS_TEST_JOB_OUT"
	jobExitEnv = "EXACTFS_TEST_JOB_EXIT" // "1": CMD exits at once, leaving the grandchild
)

func jobRole(role string) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	switch role {
	case "sleep":
		time.Sleep(2 * time.Minute)
		return 0
	case "tree":
		g := exec.Command(self)
		g.Env = append(os.Environ(), jobRoleEnv+"=sleep")
		if err := g.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "starting the grandchild:", err)
			return 3
		}
		out := fmt.Sprintf("%d %d\n", os.Getpid(), g.Process.Pid)
		if err := os.WriteFile(os.Getenv(jobOutEnv)+".tmp", []byte(out), 0o644); err != nil {
			return 3
		}
		if err := os.Rename(os.Getenv(jobOutEnv)+".tmp", os.Getenv(jobOutEnv)); err != nil {
			return 3
		}
		if os.Getenv(jobExitEnv) == "1" {
			return 0
		}
		time.Sleep(2 * time.Minute)
		return 0
	case "shellholder":
		return shellHolder()
	case "holder":
		c := &child{argv: []string{self}, stdin: bytes.NewReader(nil), stdout: io.Discard, stderr: os.Stderr,
			env: []string{jobRoleEnv + "=tree"}}
		if _, err := c.start(&env{stderr: os.Stderr}); err != nil {
			return 3
		}
		time.Sleep(2 * time.Minute) // until the test kills this process
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown job role", role)
	return 3
}

// treePids waits for the pids the "tree" role writes, and opens a handle
// on each (kept until the end of the test, so the pids cannot be reused);
// the cleanup terminates whatever is still running.
func treePids(t *testing.T, out string) []windows.Handle {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var b []byte
	for {
		var err error
		if b, err = os.ReadFile(out); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command wrote no pids to %s in a minute", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var hs []windows.Handle
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pids %q: %v", b, err)
		}
		h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_TERMINATE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
		if err != nil {
			t.Fatalf("opening pid %d: %v", pid, err)
		}
		hs = append(hs, h)
	}
	t.Cleanup(func() {
		for _, h := range hs {
			windows.TerminateProcess(h, 1)
			windows.CloseHandle(h)
		}
	})
	return hs
}

// wantGone waits up to 20 s for each process to end.
func wantGone(t *testing.T, hs []windows.Handle, what []string) {
	t.Helper()
	for i, h := range hs {
		ev, err := windows.WaitForSingleObject(h, 20000)
		if err != nil || ev != windows.WAIT_OBJECT_0 {
			t.Errorf("%s still runs 20 s later (wait: %#x, %v)", what[i], ev, err)
		}
	}
}

// TestWindowsJobKillsTreeWithExactfs: when exactfs is killed
// (TerminateProcess, no chance to clean up) while it runs CMD, the system
// closes its handle on the Job object, and CMD and the process CMD started
// die with it. Before, CMD was a plain child and both ran on unlocked.
func TestWindowsJobKillsTreeWithExactfs(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "pids")
	holder := exec.Command(self)
	holder.Env = append(os.Environ(), jobRoleEnv+"=holder", jobOutEnv+"="+out)
	holder.Stderr = os.Stderr
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	hs := treePids(t, out)
	if err := holder.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	holder.Wait()
	wantGone(t, hs, []string{"CMD", "CMD's child"})
}

// TestWindowsJobEndsLeftoversWhenCMDExits: CMD exits and leaves a process
// running; once exactfs has waited for CMD (and before it would release
// the lock) that process is gone too. Before, it ran on unlocked.
func TestWindowsJobEndsLeftoversWhenCMDExits(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "pids")
	var stderr bytes.Buffer
	c := &child{argv: []string{self}, stdin: bytes.NewReader(nil), stdout: io.Discard, stderr: &stderr,
		env: []string{jobRoleEnv + "=tree", jobOutEnv + "=" + out, jobExitEnv + "=1"}}
	run, err := c.start(&env{stderr: &stderr})
	if err != nil {
		t.Fatalf("start: %v (%s)", err, stderr.String())
	}
	hs := treePids(t, out)
	if status := run.wait(); status != 0 {
		t.Fatalf("CMD exited %d", status)
	}
	wantGone(t, hs[1:], []string{"the process CMD left running"})
}
