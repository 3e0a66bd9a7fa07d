package jobctl

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// helperEnv makes the test binary a helper process instead of running the
// tests: "report" writes its answers to fd 3; "session" (a session leader
// with the terminal as its controlling terminal) starts a "report" helper
// in a process group of its own, a background group of that terminal.
const helperEnv = "JOBCTL_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "report":
		fmt.Fprint(os.NewFile(3, "answers"), answers())
		os.Exit(0)
	case "session":
		os.Setenv(helperEnv, "report")
		c := exec.Command(os.Args[0])
		c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
		c.ExtraFiles = []*os.File{os.NewFile(3, "answers")}
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Run(); err != nil {
			fmt.Fprintf(os.NewFile(3, "answers"), "background helper: %v", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// answers is what the helper reports: InForeground, then FromTerminal of
// SIGINT, SIGQUIT, SIGTERM and SIGHUP.
func answers() string {
	return fmt.Sprint(InForeground(), FromTerminal(syscall.SIGINT), FromTerminal(syscall.SIGQUIT),
		FromTerminal(syscall.SIGTERM), FromTerminal(syscall.SIGHUP))
}

// openPTY returns the controller and the terminal side of a new
// pseudo-terminal, neither of them this process's controlling terminal.
func openPTY(t *testing.T) (ptmx, tty *os.File) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return ptmx, tty
}

// runHelper runs the test binary as helper mode with the given standard
// descriptors and attributes, and returns what it reported.
func runHelper(t *testing.T, mode string, stdio [3]*os.File, attr *syscall.SysProcAttr) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := exec.Command(os.Args[0])
	c.Env = append(os.Environ(), helperEnv+"="+mode)
	c.Stdin, c.Stdout, c.Stderr = stdio[0], stdio[1], stdio[2]
	c.ExtraFiles = []*os.File{w}
	c.SysProcAttr = attr
	err = c.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(r)
	if err := c.Wait(); err != nil {
		t.Fatalf("helper %s: %v; it said %q", mode, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestForegroundOnRealTerminal runs helpers on a pseudo-terminal in every
// position that matters and checks each answer: only a process of the
// terminal's foreground group, on its own controlling terminal, gets SIGINT
// and SIGQUIT from the keyboard; SIGTERM and SIGHUP never count as the
// keyboard's.
func TestForegroundOnRealTerminal(t *testing.T) {
	_, tty := openPTY(t)
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	// Setctty makes the terminal (fd Ctty of the child) the new session's
	// controlling terminal and the session leader's group its foreground.
	ownTerminal := &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	for _, tc := range []struct {
		name  string
		mode  string
		stdio [3]*os.File
		attr  *syscall.SysProcAttr
		want  string
	}{
		{"foreground group of its terminal", "report", [3]*os.File{tty, tty, tty}, ownTerminal, "true true true false false"},
		// Only stderr on the terminal: stdin and stdout answer ENOTTY and
		// the search goes on to fd 2.
		{"foreground, the terminal on stderr only", "report", [3]*os.File{null, null, tty}, &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 2}, "true true true false false"},
		{"background group of its terminal", "session", [3]*os.File{tty, tty, tty}, ownTerminal, "false false false false false"},
		// A terminal that is not the controlling terminal of the process
		// (a session without one) answers ENOTTY: its keyboard signals
		// cannot reach this process.
		{"on a terminal that is not its own", "report", [3]*os.File{tty, tty, tty}, &syscall.SysProcAttr{Setsid: true}, "false false false false false"},
		{"no terminal at all", "report", [3]*os.File{null, null, null}, &syscall.SysProcAttr{Setsid: true}, "false false false false false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := runHelper(t, tc.mode, tc.stdio, tc.attr); got != tc.want {
				t.Errorf("InForeground, FromTerminal(INT, QUIT, TERM, HUP) = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestIsTerminal: a pseudo-terminal is a terminal; a pipe and a regular
// file are not, so the live progress lines never go into a log.
func TestIsTerminal(t *testing.T) {
	ptmx, tty := openPTY(t)
	if !IsTerminal(tty) || !IsTerminal(ptmx) {
		t.Error("a pseudo-terminal was not taken for a terminal")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if IsTerminal(w) {
		t.Error("a pipe was taken for a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Error("a regular file was taken for a terminal")
	}
}
