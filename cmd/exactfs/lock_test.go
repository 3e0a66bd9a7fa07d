//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// holder runs "exactfs lock STATEFILE -- sh -c 'touch READY; sleep SECS'" in
// the background and returns once the command runs under the lock.
type holder struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	done   chan error
}

func startHolder(t *testing.T, dir, stateFile string, secs int) *holder {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "ready")
	h := &holder{done: make(chan error, 1)}
	h.cmd = exec.Command(exactfsBin, "lock", stateFile, "--", "sh", "-c", fmt.Sprintf("touch %s; exec sleep %d", ready, secs))
	h.cmd.Dir = dir
	h.cmd.Stderr = &h.stderr
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { h.done <- h.cmd.Wait() }()
	t.Cleanup(func() {
		h.cmd.Process.Kill()
		<-h.done
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(ready); err == nil {
			return h
		}
		select {
		case err := <-h.done:
			t.Fatalf("holder exited before taking the lock: %v\n%s", err, h.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("holder did not take the lock within 10s\n%s", h.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestUpdateFromConcurrentShellsLosesNothing runs 8 shell loops, each
// incrementing a counter with awk through "exactfs update" 25 times.
func TestUpdateFromConcurrentShellsLosesNothing(t *testing.T) {
	dir := t.TempDir()
	const shells, perShell = 8, 25
	script := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do
  "$X" update --timeout 60s counter -- awk '{ n = $1 } END { print n + 1 }' || exit $?
  i=$((i + 1))
done`, perShell)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, shells)
	outs := make([]bytes.Buffer, shells)
	for i := range shells {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.CommandContext(ctx, "sh", "-c", script)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "X="+exactfsBin)
			cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
			errs[i] = cmd.Run()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("shell %d: %v\n%s", i, err, outs[i].String())
		}
	}
	got := strings.TrimSpace(mustRead(t, filepath.Join(dir, "counter")))
	if got != strconv.Itoa(shells*perShell) {
		t.Fatalf("counter = %s after %d updates: updates were lost", got, shells*perShell)
	}
}

func TestUpdateFailingCommandLeavesStateUntouched(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	expectCode(t, runIn(t, dir, quick, "", "update", "state.json", "--", "sh", "-c", `echo '{"n":5}'`), 0, "update")
	before, _ := os.Stat(path)
	r := runIn(t, dir, quick, "", "update", "state.json", "--", "sh", "-c", `cat; echo garbage; exit 3`)
	expectCode(t, r, 3, "update with a failing command")
	if strings.Contains(r.stdout, "garbage") {
		t.Errorf("the failing command's stdout leaked: %q", r.stdout)
	}
	after, _ := os.Stat(path)
	if got := mustRead(t, path); got != "{\"n\":5}\n" || !os.SameFile(before, after) {
		t.Fatalf("state after a failing update: %q (same inode: %v)", got, os.SameFile(before, after))
	}
	// The command sees the current contents on stdin, and absent is empty.
	r = runIn(t, dir, quick, "", "update", "state.json", "--", "sh", "-c", `cat; cat >&2 </dev/null`)
	expectCode(t, r, 0, "update with cat")
	if got := mustRead(t, path); got != "{\"n\":5}\n" {
		t.Fatalf("cat did not see the current contents: %q", got)
	}
	r = runIn(t, dir, quick, "", "update", "fresh", "--", "sh", "-c", `test "$(wc -c)" -eq 0 && echo empty`)
	expectCode(t, r, 0, "update of an absent file")
	if got := mustRead(t, filepath.Join(dir, "fresh")); got != "empty\n" {
		t.Fatalf("absent state file: command saw %q", got)
	}
	expectCode(t, runIn(t, dir, quick, "", "update", "state.json", "--", "no-such-command-xyz"), exitNotFound, "update with a missing command")
	if got := mustRead(t, path); got != "{\"n\":5}\n" {
		t.Fatalf("state changed by a command that never ran: %q", got)
	}
	// The lock was released each time.
	expectCode(t, runIn(t, dir, quick, "", "lock", "--try", "state.json", "--", "true"), 0, "lock --try after the updates")
}

func TestLockPassesStatusThrough(t *testing.T) {
	dir := t.TempDir()
	expectCode(t, runIn(t, dir, quick, "", "lock", "s", "--", "sh", "-c", "exit 5"), 5, "lock -- exit 5")
	expectCode(t, runIn(t, dir, quick, "", "lock", "s", "sh", "-c", "exit 0"), 0, "lock without --")
	r := runIn(t, dir, quick, "", "lock", "s", "--", "sh", "-c", `echo "$EXACTFS_LOCK_TOKEN"`)
	expectCode(t, r, 0, "lock -- echo token")
	if len(strings.TrimSpace(r.stdout)) < 16 {
		t.Errorf("EXACTFS_LOCK_TOKEN = %q", r.stdout)
	}
	expectCode(t, runIn(t, dir, quick, "", "lock", "s", "--", "sh", "-c", "kill -KILL $$"), 128+9, "lock -- a command killed by SIGKILL")
	expectCode(t, runIn(t, dir, quick, "", "lock", "--try", "s", "--", "true"), 0, "lock --try afterwards")
	for _, args := range [][]string{{"lock"}, {"lock", "s"}, {"lock", "s", "--"}, {"update", "s"}, {"lock", "--timeout", "soon", "s", "--", "true"}, {"lock", "--conflict-exit-code", "300", "s", "--", "true"}} {
		expectCode(t, runIn(t, dir, quick, "", args...), exitUsage, strings.Join(args, " "))
	}
}

func TestLockTryOnHeldLockExits75Promptly(t *testing.T) {
	dir := t.TempDir()
	startHolder(t, dir, "state.json", 30)
	for _, args := range [][]string{
		{"lock", "--try", "state.json", "--", "touch", "ran"},
		{"lock", "--timeout", "0", "state.json", "--", "touch", "ran"},
		{"update", "--try", "state.json", "--", "touch", "ran"},
	} {
		r := runIn(t, dir, quick, "", args...)
		expectCode(t, r, exitBusy, strings.Join(args, " "))
		checkPrompt(t, r, time.Second, strings.Join(args, " ")+" on a held lock")
		if !strings.Contains(r.stderr, "held by pid") {
			t.Errorf("%s does not say who holds the lock: %s", strings.Join(args, " "), r.stderr)
		}
	}
	r := runIn(t, dir, quick, "", "lock", "--try", "--conflict-exit-code", "9", "state.json", "--", "touch", "ran")
	expectCode(t, r, 9, "lock --try --conflict-exit-code 9")
	r = runIn(t, dir, quick, "", "lock", "--timeout", "700ms", "state.json", "--", "touch", "ran")
	expectCode(t, r, exitBusy, "lock --timeout 700ms")
	if r.elapsed < 600*time.Millisecond || r.elapsed > 3*time.Second {
		t.Errorf("lock --timeout 700ms returned after %v", r.elapsed)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Fatal("a command ran without the lock")
	}
}

// TestLockForwardsSIGTERMAndReleases sends SIGTERM to exactfs while its
// command runs: the command gets it, and the lock is free afterwards.
func TestLockForwardsSIGTERMAndReleases(t *testing.T) {
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	cmd := exec.Command(exactfsBin, "lock", "s", "--", "sh", "-c",
		`trap 'echo got-term; exit 7' TERM; touch `+ready+`; sleep 30 >/dev/null 2>&1 & wait`)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer cmd.Process.Kill()
	for i := 0; ; i++ {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if i > 1000 {
			t.Fatal("the command never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("exactfs lock did not finish after SIGTERM")
	}
	if cmd.ProcessState.ExitCode() != 7 || !strings.Contains(out.String(), "got-term") {
		t.Fatalf("after SIGTERM: exit %d, output %q; want the command's trap to run and exit 7", cmd.ProcessState.ExitCode(), out.String())
	}
	expectCode(t, runIn(t, dir, quick, "", "lock", "--try", "s", "--", "true"), 0, "lock --try after SIGTERM")
}

// TestUnsafeStatePathsExit77 plants a symlink (to a file that must not be
// touched) or a FIFO with no writer at STATEFILE.lock and at STATEFILE.
func TestUnsafeStatePathsExit77(t *testing.T) {
	for _, tc := range []struct {
		at, kind string
		args     []string
	}{
		{"s.lock", "symlink", []string{"lock", "s", "--", "touch", "ran"}},
		{"s.lock", "fifo", []string{"lock", "s", "--", "touch", "ran"}},
		{"s.lock", "symlink", []string{"update", "s", "--", "touch", "ran"}},
		{"s.lock", "fifo", []string{"update", "s", "--", "touch", "ran"}},
		{"s", "symlink", []string{"update", "s", "--", "touch", "ran"}},
		{"s", "fifo", []string{"update", "s", "--", "touch", "ran"}},
	} {
		t.Run(tc.args[0]+"/"+tc.kind+"-at-"+tc.at, func(t *testing.T) {
			dir := t.TempDir()
			precious := filepath.Join(t.TempDir(), "precious")
			os.WriteFile(precious, []byte("not yours"), 0o644)
			before, _ := os.Stat(precious)
			at := filepath.Join(dir, tc.at)
			if tc.kind == "symlink" {
				os.Symlink(precious, at)
			} else if err := syscall.Mkfifo(at, 0o600); err != nil {
				t.Fatal(err)
			}
			r := runIn(t, dir, quick, "", tc.args...)
			expectCode(t, r, exitUnsafe, strings.Join(tc.args, " "))
			checkPrompt(t, r, time.Second, "the refusal")
			if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
				t.Fatal("the command ran")
			}
			fi, err := os.Lstat(at)
			if err != nil || (tc.kind == "symlink") != (fi.Mode()&os.ModeSymlink != 0) || (tc.kind == "fifo") != (fi.Mode()&os.ModeNamedPipe != 0) {
				t.Fatalf("the %s at %s was touched: %v %v", tc.kind, tc.at, fi, err)
			}
			after, _ := os.Stat(precious)
			if mustRead(t, precious) != "not yours" || !after.ModTime().Equal(before.ModTime()) || !os.SameFile(before, after) {
				t.Fatal("the symlink's target was changed")
			}
		})
	}
}

// TestUpdateForwardsSIGTERMAndLeavesStateUntouched: SIGTERM to exactfs
// reaches CMD; CMD's failure leaves the state file as it was, and the lock
// is released.
func TestUpdateForwardsSIGTERMAndLeavesStateUntouched(t *testing.T) {
	dir := t.TempDir()
	expectCode(t, runIn(t, dir, quick, "", "update", "s", "--", "echo", "before"), 0, "update")
	ready := filepath.Join(dir, "ready")
	cmd := exec.Command(exactfsBin, "update", "s", "--", "sh", "-c",
		`cat >/dev/null; echo after; trap 'exit 9' TERM; touch `+ready+`; sleep 30 >/dev/null 2>&1 & wait`)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer cmd.Process.Kill()
	for i := 0; ; i++ {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if i > 1000 {
			t.Fatal("the command never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("exactfs update did not finish after SIGTERM")
	}
	if got := cmd.ProcessState.ExitCode(); got != 9 {
		t.Fatalf("exit %d after SIGTERM, want the command's 9", got)
	}
	if got := mustRead(t, filepath.Join(dir, "s")); got != "before\n" {
		t.Fatalf("state after an interrupted update: %q", got)
	}
	expectCode(t, runIn(t, dir, quick, "", "lock", "--try", "s", "--", "true"), 0, "lock --try after SIGTERM")
}
