package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/holdlog"
)

// guardWorkerEnv makes this test binary a worker process of the guard tests
// instead of running tests (see init below): the tests put it inside CMD's
// tree, where the guard must find it.
const guardWorkerEnv = "EXACTFS_TEST_GUARD_WORKER"

func init() {
	switch os.Getenv(guardWorkerEnv) {
	case "rmw":
		os.Exit(rmwWorker(os.Args[1:]))
	case "sleep", "sleep-ignoring-term":
		// sleep MARKER: sleeps until killed; MARKER (the test's directory)
		// in its argv lets the test find it in /proc. (A Go program
		// catches SIGTERM even when started with it ignored, hence the
		// second mode.)
		if os.Getenv(guardWorkerEnv) == "sleep-ignoring-term" {
			signal.Ignore(syscall.SIGTERM)
		}
		time.Sleep(time.Hour)
		os.Exit(0)
	}
}

// rmwWorker is a slow read-modify-write of a counter file inside a logged
// critical section: args COUNTER HOLDLOG SLEEP. It logs "enter", reads the
// counter, sleeps, writes counter+1 and logs "exit" (CLOCK_MONOTONIC, the
// internal/holdlog format). A worker killed midway leaves an enter without
// an exit and an unchanged counter.
func rmwWorker(args []string) int {
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "rmw worker: want COUNTER HOLDLOG SLEEP")
		return 2
	}
	pause, err := time.ParseDuration(args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	log, err := holdlog.Open(args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := log.Enter(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	time.Sleep(pause)
	if err := os.WriteFile(args[0], []byte(strconv.Itoa(n+1)+"\n"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := log.Exit(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// workerCmd is a shell command line that runs this test binary as a worker.
func workerCmd(t *testing.T, mode string, args ...string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	line := "env " + guardWorkerEnv + "=" + mode + " " + shellQuote(self)
	for _, a := range args {
		line += " " + shellQuote(a)
	}
	return line
}

// liveWith lists the live (not zombie) processes whose command line contains
// marker, this process aside.
func liveWith(marker string) []string {
	var out []string
	names, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, name := range names {
		dir := filepath.Dir(name)
		if filepath.Base(dir) == strconv.Itoa(os.Getpid()) {
			continue
		}
		cmdline, err := os.ReadFile(name)
		if err != nil || !bytes.Contains(cmdline, []byte(marker)) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && bytes.HasPrefix(bytes.TrimSpace(stat[i+1:]), []byte("Z")) {
			continue
		}
		out = append(out, filepath.Base(dir)+": "+strings.ReplaceAll(string(bytes.TrimRight(cmdline, "\x00")), "\x00", " "))
	}
	return out
}

// waitGone waits until no live process has marker in its command line.
func waitGone(t *testing.T, marker string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		left := liveWith(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still running %v after the test's holders were done:\n%s", limit, strings.Join(left, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitEntered waits until the holdlog at path has an enter line.
func waitEntered(t *testing.T, path string, waited <-chan struct{}, stderr string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if b, _ := os.ReadFile(path); bytes.HasPrefix(b, []byte("enter ")) {
			return
		}
		select {
		case <-waited:
			t.Fatalf("the holder exited before its worker entered\n%s", mustRead(t, stderr))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the holder's worker never entered\n%s", mustRead(t, stderr))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startGuardedHolder starts the holder with its stderr in a file: a pipe
// would keep Wait waiting for whatever of the tree survives, which hides the
// survivor. The returned channel is closed once exactfs has exited.
func startGuardedHolder(t *testing.T, holder *exec.Cmd, dir string) (waited chan struct{}, stderr string) {
	t.Helper()
	stderr = filepath.Join(dir, "holder.stderr")
	f, err := os.Create(stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	holder.Dir, holder.Stderr = dir, f
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	waited = make(chan struct{})
	go func() { holder.Wait(); close(waited) }()
	t.Cleanup(func() { holder.Process.Kill(); <-waited })
	return waited, stderr
}

// killedHolderCase is one way of putting a slow read-modify-write below CMD.
type killedHolderCase struct {
	name string
	// script is the first holder's CMD (for sh -c) given its worker's
	// command line.
	script func(worker string) string
}

var killedHolderCases = []killedHolderCase{
	// The shell's child: sh forks it because a command follows it.
	{"grandchild", func(w string) string { return w + "; true" }},
	// In a session of its own, still the shell's child.
	{"setsid", func(w string) string { return "setsid " + w + "; true" }},
	// In a session of its own and orphaned at once (setsid -f forks and its
	// parent exits), as a daemon double-forks: reparented to the subreaper.
	{"setsid-orphan", func(w string) string { return "setsid -f " + w + "; sleep 30" }},
	// In a process group of its own, in the background.
	{"background-group", func(w string) string { return "set -m; " + w + " & wait" }},
}

// TestLockKilledHolderTakesCMDTreeWithIt SIGKILLs "exactfs lock" while a
// process below its CMD is inside a slow read-modify-write of a counter, and
// at once runs a second "exactfs lock" doing the same. No process of the
// first CMD's tree may go on once the lock is taken over: the hold intervals
// (CLOCK_MONOTONIC) of the completed read-modify-writes do not overlap, and
// the counter counts every completed one (on the code before the guard, the
// first worker finished unlocked: two completed increments, counter 1).
// Afterwards nothing of either tree, guard included, is left running.
func TestLockKilledHolderTakesCMDTreeWithIt(t *testing.T) {
	for _, tc := range killedHolderCases {
		t.Run(tc.name, func(t *testing.T) {
			rmwHolderKilled(t, "lock", tc.script)
		})
	}
}

// TestUpdateKilledHolderTakesCMDTreeWithIt is the same with "exactfs update":
// its CMD's tree may have side effects of its own under the lock.
func TestUpdateKilledHolderTakesCMDTreeWithIt(t *testing.T) {
	for _, tc := range killedHolderCases {
		t.Run(tc.name, func(t *testing.T) {
			rmwHolderKilled(t, "update", tc.script)
		})
	}
}

func rmwHolderKilled(t *testing.T, verb string, script func(worker string) string) {
	dir := t.TempDir()
	counter := filepath.Join(dir, "counter")
	if err := os.WriteFile(counter, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "s"), []byte("state\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	log1, log2 := filepath.Join(dir, "hold1.log"), filepath.Join(dir, "hold2.log")
	first := script(workerCmd(t, "rmw", counter, log1, "1500ms"))
	second := workerCmd(t, "rmw", counter, log2, "300ms")
	if verb == "update" {
		first += "; cat"
		second += "; cat"
	}

	holder := exec.Command(exactfsBin, verb, "s", "--", "sh", "-c", first)
	waited, stderr := startGuardedHolder(t, holder, dir)
	waitEntered(t, log1, waited, stderr)

	holder.Process.Signal(syscall.SIGKILL)
	<-waited
	r := runIn(t, dir, 20*time.Second, "", verb, "--timeout", "15s", "s", "--", "sh", "-c", second)
	expectCode(t, r, 0, "the second "+verb)
	// The first worker, left alone, would finish 1.5 s after it entered.
	waitGone(t, dir, 10*time.Second)

	rep, err := holdlog.Check(true, log1, log2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Overlaps) != 0 {
		t.Fatalf("hold logs %s %s: %s: the first CMD's tree went on after the lock was taken over", log1, log2, rep)
	}
	got := strings.TrimSpace(mustRead(t, counter))
	if want := strconv.Itoa(len(rep.Intervals)); got != want {
		t.Fatalf("counter %s after %d completed read-modify-writes (%s): an update was lost", got, len(rep.Intervals), rep)
	}
	if len(rep.Open) != 1 || rep.Open[0].PID == 0 {
		t.Fatalf("want the first worker killed inside its critical section, got %s", rep)
	}
}

// TestLockGuardKilledTakesCMDTreeWithIt SIGKILLs the guard instead of
// exactfs: CMD dies with it (PR_SET_PDEATHSIG), what CMD started is
// reparented to exactfs (a subreaper too), and exactfs kills it before it
// releases the lock and exits.
func TestLockGuardKilledTakesCMDTreeWithIt(t *testing.T) {
	dir := t.TempDir()
	counter := filepath.Join(dir, "counter")
	if err := os.WriteFile(counter, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	log1 := filepath.Join(dir, "hold1.log")
	holder := exec.Command(exactfsBin, "lock", "s", "--", "sh", "-c",
		"setsid -f "+workerCmd(t, "rmw", counter, log1, "3s")+"; "+workerCmd(t, "sleep", dir)+"; true")
	waited, stderr := startGuardedHolder(t, holder, dir)
	waitEntered(t, log1, waited, stderr)

	guard := 0
	for _, line := range liveWith(guardArg) {
		pid, _ := strconv.Atoi(line[:strings.IndexByte(line, ':')])
		if ppid, ok := parentOf(pid); ok && ppid == holder.Process.Pid {
			guard = pid
		}
	}
	if guard == 0 {
		t.Fatalf("no guard below exactfs (pid %d): %q", holder.Process.Pid, liveWith(guardArg))
	}
	syscall.Kill(guard, syscall.SIGKILL)
	select {
	case <-waited:
	case <-time.After(15 * time.Second):
		t.Fatalf("exactfs did not finish after its guard was killed\n%s", mustRead(t, stderr))
	}
	if code := holder.ProcessState.ExitCode(); code != 128+int(syscall.SIGKILL) {
		t.Fatalf("exit %d after the guard was killed, want %d\n%s", code, 128+int(syscall.SIGKILL), mustRead(t, stderr))
	}
	if left := liveWith(dir); len(left) != 0 {
		t.Fatalf("running after exactfs released the lock:\n%s", strings.Join(left, "\n"))
	}
	if rep, err := holdlog.Check(true, log1); err != nil || len(rep.Open) != 1 {
		t.Fatalf("want the worker killed inside its critical section: %s %v", rep, err)
	}
	expectCode(t, runIn(t, dir, quick, "", "lock", "--try", "s", "--", "true"), 0, "lock --try afterwards")
}

// TestLockEndsCMDLeftoversBeforeRelease: processes CMD leaves running in the
// background (in its group, in a session of their own, orphaned, ignoring
// SIGTERM) get SIGTERM when CMD exits, then SIGKILL, and are all gone before
// exactfs releases the lock and exits with CMD's status. Before the guard
// they ran on, unlocked.
func TestLockEndsCMDLeftoversBeforeRelease(t *testing.T) {
	dir := t.TempDir()
	termed, trapped := filepath.Join(dir, "termed"), filepath.Join(dir, "trapped")
	sleeper := workerCmd(t, "sleep", dir)
	script := strings.Join([]string{
		sleeper + " &",
		"setsid " + sleeper + " &",
		"setsid -f " + sleeper,
		workerCmd(t, "sleep-ignoring-term", dir) + " &",
		// SIGTERM comes first: a leftover's handler runs.
		"(trap 'echo > " + shellQuote(termed) + "; exit 0' TERM; touch " + shellQuote(trapped) + "; while :; do sleep 0.05; done) &",
		"while [ ! -e " + shellQuote(trapped) + " ]; do sleep 0.01; done", // its trap is set
		"exit 3",
	}, "\n")
	for _, verb := range []string{"lock", "update"} {
		os.Remove(termed)
		os.Remove(trapped)
		r := runIn(t, dir, 20*time.Second, "", verb, "s", "--", "sh", "-c", script)
		expectCode(t, r, 3, verb+" with leftovers")
		if left := liveWith(dir); len(left) != 0 {
			t.Fatalf("%s: running after exactfs released the lock and exited:\n%s", verb, strings.Join(left, "\n"))
		}
		if _, err := os.Stat(termed); err != nil {
			t.Fatalf("%s: the leftover's SIGTERM handler did not run: %v", verb, err)
		}
	}
}

// TestLockGuardKeepsStatusesAndStreams: with CMD below the guard, exactfs
// still exits with CMD's status, 128+n for a signal, 127/126 for a CMD that
// cannot be run, CMD sees the lock's variables, and CMD's streams are
// exactfs's.
func TestLockGuardKeepsStatusesAndStreams(t *testing.T) {
	dir := t.TempDir()
	expectCode(t, runIn(t, dir, quick, "", "lock", "s", "--", "sh", "-c", "exit 42"), 42, "exit 42")
	expectCode(t, runIn(t, dir, quick, "", "lock", "s", "--", "sh", "-c", "kill -USR1 $$"), 128+int(syscall.SIGUSR1), "killed by SIGUSR1")
	r := runIn(t, dir, quick, "", "lock", "s", "--", "no-such-command-here")
	expectCode(t, r, exitNotFound, "missing CMD")
	if !strings.Contains(r.stderr, "cannot run no-such-command-here") {
		t.Fatalf("missing CMD: %s", r)
	}
	if err := os.WriteFile(filepath.Join(dir, "noexec"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	expectCode(t, runIn(t, dir, quick, "", "lock", "s", "--", "./noexec"), exitCannotExec, "non-executable CMD")
	r = runIn(t, dir, quick, "in", "lock", "s", "--", "sh", "-c", `cat; echo " $EXACTFS_LOCK_PATH"; echo err >&2`)
	expectCode(t, r, 0, "streams")
	if want := "in " + filepath.Join(dir, "s.lock") + "\n"; r.stdout != want || r.stderr != "err\n" {
		t.Fatalf("stdout %q stderr %q, want %q and %q", r.stdout, r.stderr, want, "err\n")
	}
}

// TestGuardArgumentIsNotACommand: the hidden argument run by hand (fd 3 not
// a pipe from exactfs) is refused with a usage error, and CMD is not run.
func TestGuardArgumentIsNotACommand(t *testing.T) {
	dir := t.TempDir()
	notPipe, err := os.Create(filepath.Join(dir, "fd3"))
	if err != nil {
		t.Fatal(err)
	}
	defer notPipe.Close()
	cmd := exec.Command(exactfsBin, guardArg, "--", "touch", filepath.Join(dir, "ran"))
	cmd.ExtraFiles = []*os.File{notPipe}
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != exitUsage || !strings.Contains(string(out), "not a command") {
		t.Fatalf("exit %d (%v), output %q; want %d and an explanation", code, err, out, exitUsage)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Fatal("CMD ran")
	}
}
