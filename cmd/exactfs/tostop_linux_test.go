package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// terminalJob is exactfs run as the foreground job of a session of its own
// on a pseudo-terminal, the way an interactive shell with job control runs
// it, with the terminal's output collected.
type terminalJob struct {
	cmd    *exec.Cmd
	ptmx   *os.File
	waited chan struct{}

	mu  sync.Mutex
	out bytes.Buffer
}

// startTerminalJob starts exactfs ARGS in dir as the session leader and
// foreground process group of a new pseudo-terminal whose termios has
// TOSTOP set (stty tostop): a process of a background group of the session
// that writes to it is stopped by SIGTTOU.
func startTerminalJob(t *testing.T, dir string, args ...string) *terminalJob {
	t.Helper()
	return startOnTerminal(t, dir, append([]string{exactfsBin}, args...)...)
}

// startOnTerminal is startTerminalJob for any command line (exactfs under
// unshare, say).
func startOnTerminal(t *testing.T, dir string, argv ...string) *terminalJob {
	t.Helper()
	ptmx, tty := openPTY(t)
	tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Lflag |= unix.TOSTOP | unix.ISIG
	if err := unix.IoctlSetTermios(int(tty.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	// The reader below must not block in read(2) on a descriptor in
	// blocking mode (openPTY's, after its Fd calls): Close would then wait
	// for that read, and the terminal would never hang up. A non-blocking
	// copy goes through Go's poller, whose Close ends the read at once.
	fd, err := unix.FcntlInt(ptmx.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	ptmx.Close()
	ptmx = os.NewFile(uintptr(fd), "ptmx")
	t.Cleanup(func() { ptmx.Close() })
	j := &terminalJob{ptmx: ptmx, waited: make(chan struct{})}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			j.mu.Lock()
			j.out.Write(buf[:n])
			j.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	j.cmd = exec.Command(argv[0], argv[1:]...)
	j.cmd.Dir = dir
	j.cmd.Stdin, j.cmd.Stdout, j.cmd.Stderr = tty, tty, tty
	// Setctty makes the terminal the session's controlling terminal and
	// the job's group its foreground group: it is the foreground job.
	j.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := j.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { j.cmd.Wait(); close(j.waited) }()
	t.Cleanup(func() {
		// A session of its own: a stopped guard or CMD is found by the
		// session id, and killed with exactfs.
		sid := j.cmd.Process.Pid
		for _, pid := range sessionMembers(sid) {
			unix.Kill(pid, unix.SIGKILL)
		}
		<-j.waited
	})
	tty.Close() // the job has its own copies: the terminal hangs up when it ends
	return j
}

// output is what the job wrote to the terminal so far.
func (j *terminalJob) output() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.out.String()
}

// waitOutput waits until the job wrote want to the terminal.
func (j *terminalJob) waitOutput(t *testing.T, want string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !strings.Contains(j.output(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the job did not write %q to the terminal within %v; it wrote %q\n%s", want, limit, j.output(), sessionReport(j.cmd.Process.Pid))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wait waits for exactfs to exit and returns its exit status; a job that
// does not finish within limit (stopped by SIGTTOU, say) fails the test,
// saying what state each process of its session is in.
func (j *terminalJob) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-j.waited:
		return j.cmd.ProcessState.ExitCode()
	case <-time.After(limit):
		t.Fatalf("exactfs did not finish within %v on a terminal with tostop (it holds the lock all that time); terminal output %q\n%s",
			limit, j.output(), sessionReport(j.cmd.Process.Pid))
		return -1
	}
}

// sessionMembers lists the processes of session sid.
func sessionMembers(sid int) []int {
	var pids []int
	names, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, name := range names {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(name)))
		if err != nil {
			continue
		}
		if s, err := unix.Getsid(pid); err == nil && s == sid {
			pids = append(pids, pid)
		}
	}
	return pids
}

// sessionReport lists each process of session sid with its state (T:
// stopped), process group and command line.
func sessionReport(sid int) string {
	var b strings.Builder
	b.WriteString("processes of the job's session (pid state pgid cmdline):\n")
	for _, pid := range sessionMembers(sid) {
		dir := "/proc/" + strconv.Itoa(pid)
		stat, _ := os.ReadFile(dir + "/stat")
		cmdline, _ := os.ReadFile(dir + "/cmdline")
		state, pgid := "?", "?"
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 {
			if f := strings.Fields(string(stat[i+1:])); len(f) > 2 {
				state, pgid = f[0], f[2]
			}
		}
		b.WriteString("  " + strconv.Itoa(pid) + " " + state + " " + pgid + " " +
			strings.ReplaceAll(string(bytes.TrimRight(cmdline, "\x00")), "\x00", " ") + "\n")
	}
	return b.String()
}

// TestLockOnTerminalWithTostop runs "exactfs lock" (and update) as the foreground job of
// a terminal with tostop set. The guard leads a process group of its own
// (guardAttr), so it is a background process of that terminal: a message it
// wrote there itself (CMD not found) stopped it with SIGTTOU, and exactfs
// waited for it forever, holding the lock (on the code before the fix the
// "not found" case fails here with the guard in state T). CMD's own output,
// on stdout and stderr, reaches the terminal too; every run ends and leaves
// the lock free.
func TestLockOnTerminalWithTostop(t *testing.T) {
	for _, tc := range []struct {
		name string
		verb string
		cmd  []string
		code int
		want []string
	}{
		{"CMD not found", "lock", []string{"exactfs-test-no-such-command"}, exitNotFound, []string{"cannot run exactfs-test-no-such-command"}},
		{"CMD not executable", "lock", []string{"./not-executable"}, exitCannotExec, []string{"cannot run ./not-executable"}},
		{"update CMD not found", "update", []string{"exactfs-test-no-such-command"}, exitNotFound, []string{"cannot run exactfs-test-no-such-command"}},
		{"CMD writes", "lock", []string{"sh", "-c", "echo to-stdout; echo to-stderr >&2"}, 0, []string{"to-stdout", "to-stderr"}},
		{"update CMD writes stderr", "update", []string{"sh", "-c", "echo to-stderr >&2; echo new"}, 0, []string{"to-stderr"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "not-executable"), []byte("#!/bin/sh\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			j := startTerminalJob(t, dir, append([]string{tc.verb, "state.json", "--"}, tc.cmd...)...)
			if code := j.wait(t, 20*time.Second); code != tc.code {
				t.Fatalf("exit %d, want %d; terminal output %q", code, tc.code, j.output())
			}
			// The terminal hangs up once the last process holding it is
			// gone; the output is all there by then.
			for _, w := range tc.want {
				j.waitOutput(t, w, 5*time.Second)
			}
			expectCode(t, runIn(t, dir, quick, "", "lock", "--try", "state.json", "--", "true"), 0, "lock --try afterwards")
		})
	}
}

// TestLockCtrlCOnTerminal types ^C on the terminal of "exactfs lock" while
// CMD and a child of it run: the keyboard's SIGINT reaches CMD (its trap
// runs), the guard survives it and ends CMD's leftovers, and exactfs exits
// with CMD's status and releases the lock.
func TestLockCtrlCOnTerminal(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "marker")
	j := startTerminalJob(t, dir, "lock", "state.json", "--", "sh", "-c",
		`trap 'echo got-int; exit 9' INT; `+workerCmd(t, "sleep", marker)+` & echo ready; wait`)
	j.waitOutput(t, "ready", 15*time.Second)
	if _, err := j.ptmx.Write([]byte{0x03}); err != nil { // ^C: VINTR by default
		t.Fatal(err)
	}
	if code := j.wait(t, 20*time.Second); code != 9 {
		t.Fatalf("after ^C: exit %d, want 9 (CMD's trap); terminal output %q", code, j.output())
	}
	j.waitOutput(t, "got-int", 5*time.Second)
	waitGone(t, marker, 10*time.Second)
	expectCode(t, runIn(t, dir, quick, "", "lock", "--try", "state.json", "--", "true"), 0, "lock --try after ^C")
}

// TestLockTerminalHangup closes the terminal (an ssh connection dropped)
// while "exactfs lock" runs CMD and a child of CMD from it: the hangup ends
// CMD (SIGHUP, forwarded by exactfs as well), the guard, in a process group
// of its own and so not sent the hangup, still ends the child, and exactfs
// exits 129 with the lock free.
func TestLockTerminalHangup(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "marker")
	j := startTerminalJob(t, dir, "lock", "state.json", "--", "sh", "-c",
		workerCmd(t, "sleep", marker)+` & echo ready; wait`)
	j.waitOutput(t, "ready", 15*time.Second)
	j.ptmx.Close()
	if code := j.wait(t, 20*time.Second); code != 128+int(syscall.SIGHUP) {
		t.Fatalf("after the hangup: exit %d, want %d", code, 128+int(syscall.SIGHUP))
	}
	waitGone(t, marker, 10*time.Second)
	expectCode(t, runIn(t, dir, quick, "", "lock", "--try", "state.json", "--", "true"), 0, "lock --try after the hangup")
}
