//go:build unix

package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
	"golang.org/x/sys/unix"
)

// helperEnv selects a helper mode when a test re-executes the test binary
// as a child process.
const helperEnv = "STORE_TEST_HELPER"

func TestMain(m *testing.M) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		os.Exit(m.Run())
	}
	h := helpers[mode]
	if h == nil {
		fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
		os.Exit(2)
	}
	if err := h(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

var helpers = map[string]func() error{
	"hold":      helperHold,
	"fence-seq": helperFenceSeq,
	"crash":     helperCrash,
}

func envDuration(key string) time.Duration {
	ms, _ := strconv.Atoi(os.Getenv(key))
	return time.Duration(ms) * time.Millisecond
}

// helperHold acquires a lease, says "ready" and waits to be killed.
func helperHold() error {
	l, err := AcquireLease(context.Background(), os.Getenv("STORE_DIR"), os.Getenv("STORE_NAME"),
		LeaseDuration(envDuration("STORE_LEASE_MS")), HeartbeatInterval(envDuration("STORE_HEARTBEAT_MS")))
	if err != nil {
		return err
	}
	fmt.Printf("ready %d\n", l.Fence())
	time.Sleep(time.Hour)
	return nil
}

// helperFenceSeq acquires and releases a lease STORE_N times and logs, for
// each hold, "fence enterNs exitNs" (CLOCK_MONOTONIC) to STORE_LOG.
func helperFenceSeq() error {
	n, _ := strconv.Atoi(os.Getenv("STORE_N"))
	log, err := os.OpenFile(os.Getenv("STORE_LOG"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer log.Close()
	for i := 0; i < n; i++ {
		l, err := AcquireLease(context.Background(), os.Getenv("STORE_DIR"), "seq",
			WaitBudget(60*time.Second), PollInterval(2*time.Millisecond))
		if err != nil {
			return err
		}
		enter, _ := monoNow()
		if err := l.AssertOwned(); err != nil {
			return err
		}
		exit, _ := monoNow()
		fence := l.Fence()
		if err := l.Release(); err != nil {
			return err
		}
		if _, err := fmt.Fprintf(log, "%d %d %d %d\n", fence, enter, exit, os.Getpid()); err != nil {
			return err
		}
	}
	return nil
}

// helperCrash runs one store mutation and SIGKILLs itself at the hook
// STORE_HOOK.
func helperCrash() error {
	s, err := Open(os.Getenv("STORE_DIR"))
	if err != nil {
		return err
	}
	// STORE_HOOK is "name" (die when it fires) or "first>name" (die
	// when name fires after first has fired).
	die := func(string) {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Hour)
	}
	spec := os.Getenv("STORE_HOOK")
	if first, then, ok := strings.Cut(spec, ">"); ok {
		var armed atomic.Bool
		hook.Set(first, func(string) { armed.Store(true) })
		hook.Set(then, func(p string) {
			if armed.Load() {
				die(p)
			}
		})
	} else {
		hook.Set(spec, die)
	}
	data := []byte(os.Getenv("STORE_DATA"))
	switch op := os.Getenv("STORE_OP"); op {
	case "publish":
		_, err = s.Publish("dest", data)
	case "replace":
		_, err = s.Replace("dest", data)
	case "lease":
		_, err = AcquireLease(context.Background(), filepath.Join(os.Getenv("STORE_DIR"), LocksDir), "job",
			CreateLocksDir(), LeaseDuration(300*time.Millisecond))
	case "reap":
		_, err = s.Reap(ReapMinAge(0))
	case "replace-expected":
		var id exactfs.Identity
		if _, id, err = s.ReadExpected("dest"); err == nil {
			_, err = s.ReplaceExpected("dest", data, id)
		}
	default:
		err = fmt.Errorf("unknown op %q", op)
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("the hook %s never fired", os.Getenv("STORE_HOOK"))
}

// helperCommand re-executes the test binary in a helper mode.
func helperCommand(t testing.TB, mode string, env ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{helperEnv + "=" + mode}, env...)...)
	return cmd
}

// monoNow is CLOCK_MONOTONIC in nanoseconds: one clock for every process on
// the host, so hold intervals of several processes can be compared.
func monoNow() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}

type execCmd struct {
	*exec.Cmd
	stderr *bytes.Buffer
}

// runCrashAt runs the "crash" helper for op on the store at dir and waits
// for it to die of SIGKILL at hookSpec.
func runCrashAt(t *testing.T, dir, op, hookSpec string, env ...string) {
	t.Helper()
	cmd := helperCommand(t, "crash", append([]string{"STORE_DIR=" + dir, "STORE_OP=" + op, "STORE_HOOK=" + hookSpec}, env...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("child was not killed at %s: %v: %s", hookSpec, err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("child did not finish")
	}
}
