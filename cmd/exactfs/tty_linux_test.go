package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY returns the controller and the terminal side of a new
// pseudo-terminal.
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

// TestWaitingLineOnTerminal: a lock call that waits more than a second with
// stderr on a terminal says who holds the lock.
func TestWaitingLineOnTerminal(t *testing.T) {
	dir := t.TempDir()
	h := startHolder(t, dir, "state.json", 60)
	ptmx, tty := openPTY(t)

	var out bytes.Buffer
	var mu sync.Mutex
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	cmd := exec.Command(exactfsBin, "lock", "--timeout", "2.5s", "state.json", "--", "true")
	cmd.Dir = dir
	cmd.Stderr = tty
	start := time.Now()
	err := cmd.Run()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != exitBusy {
		t.Fatalf("lock on a held lock: %v, want exit 75", err)
	}
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	got := out.String()
	mu.Unlock()
	want := fmt.Sprintf("waiting for state.json.lock, held by pid %d on this host for ", h.cmd.Process.Pid)
	if !strings.Contains(got, want) {
		t.Fatalf("after %v on a terminal, stderr lacks %q:\n%q", time.Since(start), want, got)
	}
}

// TestQuietOnTerminal: with --quiet, a lock call that waits on a terminal
// and times out prints nothing at all, not even the waiting line.
func TestQuietOnTerminal(t *testing.T) {
	dir := t.TempDir()
	startHolder(t, dir, "state.json", 60)
	ptmx, tty := openPTY(t)
	var out bytes.Buffer
	var mu sync.Mutex
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	cmd := exec.Command(exactfsBin, "lock", "-q", "-w", "1.8", "state.json", "--", "true")
	cmd.Dir = dir
	cmd.Stderr = tty
	cmd.Run()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != exitBusy {
		t.Fatalf("lock -q on a held lock: exit %v, want 75", cmd.ProcessState)
	}
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if out.Len() != 0 {
		t.Fatalf("lock -q wrote to the terminal: %q", out.String())
	}
}
