//go:build unix

package statelock

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/holdlog"
	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/liveness"
	"github.com/exactfs/exactfs/statelock/internal/wake"
)

// Multi-process tests re-execute this test binary; the environment variable
// workerEnv selects what the child does instead of running tests.
const workerEnv = "STATELOCK_TEST_WORKER"

func TestMain(m *testing.M) {
	switch os.Getenv(workerEnv) {
	case "":
		// The tests of this process run the reference release after every
		// cycle, as before sticky ownership (sticky.go): most of them
		// check what a release leaves on disk, or the claims, parked
		// descriptors and spares of the reference path, right after a
		// cycle that re-locked. Sticky ownership has its own tests
		// (sticky_linux_test.go, which turn it on), and every worker
		// process, whose loops re-lock, runs with it on, as a program does.
		defaultPolicy.Sticky = false
		os.Exit(m.Run())
	case "update":
		if err := updateWorker(); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			workerExit(1)
		}
		workerExit(0)
	case "bench":
		if err := benchWorker(); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			workerExit(1)
		}
		workerExit(0)
	case "early":
		if err := earlyWorker(); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			workerExit(1)
		}
		workerExit(0)
	case "wait":
		if err := waitWorker(); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			workerExit(1)
		}
		workerExit(0)
	case "waitcpu":
		if err := waitCPUWorker(); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			workerExit(1)
		}
		workerExit(0)
	case "hold":
		if err := holdWorker(); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			workerExit(1)
		}
		workerExit(0)
	case "holdts":
		if err := holdTimesWorker(); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			workerExit(1)
		}
		workerExit(0)
	case "updatekill":
		if err := updateKillWorker(); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			workerExit(1)
		}
		workerExit(0)
	case "slot":
		if err := slotWorker(); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			workerExit(1)
		}
		workerExit(0)
	case "handoffhold":
		if err := handoffHoldWorker(); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			workerExit(1)
		}
		workerExit(0)
	case "sticky":
		if err := stickyWorker(); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			workerExit(1)
		}
		workerExit(0)
	case "handoffwait":
		if err := handoffWaitWorker(); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			workerExit(1)
		}
		workerExit(0)
	case "killat":
		if err := killAtWorker(); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			workerExit(1)
		}
		workerExit(0)
	default:
		fmt.Fprintln(os.Stderr, "unknown worker mode")
		workerExit(2)
	}
}

// workerExit ends a worker. It first lets go of a lock the worker keeps
// (sticky ownership, SPEC §4.8.3): a process that exits while it keeps one
// leaves a record that TypeScript judges alive by its pid until the
// parent reaps the process, and most tests reap their workers in order,
// after TypeScript workers that would wait on it. The sticky worker
// (TestStickyDeadKeeperReclaimed) exits without it, on purpose.
func workerExit(code int) {
	letGoKept()
	os.Exit(code)
}

// killAtWorker SIGKILLs itself the first time the hook point named by
// STATELOCK_KILL_HOOK fires, in the acquisition (STATELOCK_KILL_IN=lock) or
// in the release (=unlock) of one lock cycle.
func killAtWorker() error {
	state := os.Getenv("STATELOCK_STATE")
	opts := []Option{WithConfigRoot(os.Getenv("STATELOCK_CONFIG"))}
	arm := func() {
		hook.Set(os.Getenv("STATELOCK_KILL_HOOK"), func(string) { syscall.Kill(os.Getpid(), syscall.SIGKILL) })
	}
	if os.Getenv("STATELOCK_KILL_IN") == "lock" {
		arm()
	}
	h, err := Lock(context.Background(), state, opts...)
	if err != nil {
		return err
	}
	arm()
	return h.Unlock()
}

// updateKillWorker runs one Update that writes STATELOCK_DATA and SIGKILLs
// itself the first time the hook point STATELOCK_KILL_HOOK fires for the
// state file (a step of the durable write).
func updateKillWorker() error {
	state := os.Getenv("STATELOCK_STATE")
	hook.Set(os.Getenv("STATELOCK_KILL_HOOK"), func(p string) {
		if filepath.Base(p) == filepath.Base(state) {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	})
	return Update(context.Background(), state, func([]byte) ([]byte, error) {
		return []byte(os.Getenv("STATELOCK_DATA")), nil
	}, WithConfigRoot(os.Getenv("STATELOCK_CONFIG")))
}

// counterState is the state file the workers share, in the shape the
// TypeScript reference worker uses ({"n": ..., "log": [...]}), so Go and
// TypeScript workers can increment one counter together. Go entries carry
// the id of the update, which the chaos test needs to prove "exactly once".
type counterState struct {
	N   int            `json:"n"`
	Log []counterEntry `json:"log"`
}

type counterEntry struct {
	Pid int    `json:"pid"`
	N   int    `json:"n"`
	ID  string `json:"id,omitempty"`
}

func parseCounter(b []byte) (counterState, error) {
	var s counterState
	if len(b) == 0 {
		return s, nil
	}
	err := json.Unmarshal(b, &s)
	return s, err
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// updateWorker runs STATELOCK_N Updates of the counter. It is Update
// itself (Lock, h.update, Unlock) with the hold log written inside the lock:
// enter after the lock is taken, exit after the state file is durably
// replaced and before the release. With STATELOCK_CHAOS=k, about one update
// in k announces itself on stdout ("E") and then holds the lock for a long
// time, for the parent to SIGKILL it inside the critical section.
func updateWorker() error {
	state := os.Getenv("STATELOCK_STATE")
	n := envInt("STATELOCK_N", 1)
	holdMs := envInt("STATELOCK_HOLD_MS", 0)
	chaos := envInt("STATELOCK_CHAOS", 0)
	prefix := os.Getenv("STATELOCK_PREFIX")
	// STATELOCK_COUNTER_ONLY keeps the state at {"n": ...}: re-encoding a
	// growing log dominates the run time under -race.
	counterOnly := os.Getenv("STATELOCK_COUNTER_ONLY") != ""
	opts := []Option{WithConfigRoot(os.Getenv("STATELOCK_CONFIG")), WithWait(time.Duration(envInt("STATELOCK_WAIT_MS", 60000)) * time.Millisecond)}
	log, err := holdlog.Open(os.Getenv("STATELOCK_LOG"))
	if err != nil {
		return err
	}
	var ack *os.File
	if p := os.Getenv("STATELOCK_ACK"); p != "" {
		if ack, err = os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err != nil {
			return err
		}
	}
	ctx := context.Background()
	for i := range n {
		id := prefix + "-" + strconv.Itoa(i)
		h, err := Lock(ctx, state, opts...)
		if err != nil {
			return err
		}
		if err := log.Enter(); err != nil {
			return err
		}
		opErr := h.update(func(old []byte) ([]byte, error) {
			s, err := parseCounter(old)
			if err != nil {
				return nil, fmt.Errorf("state does not parse: %w", err)
			}
			if chaos > 0 && rand.IntN(chaos) == 0 {
				os.Stdout.WriteString("E\n")
				time.Sleep(3 * time.Second)
			}
			if holdMs > 0 {
				time.Sleep(time.Duration(holdMs) * time.Millisecond)
			}
			s.N++
			if !counterOnly {
				s.Log = append(s.Log, counterEntry{Pid: os.Getpid(), N: s.N, ID: id})
			}
			return json.Marshal(s)
		})
		if opErr == nil {
			opErr = log.Exit()
		}
		if err := h.Unlock(); err != nil || opErr != nil {
			return fmt.Errorf("update %s: %v, unlock: %v", id, opErr, err)
		}
		if ack != nil {
			if _, err := ack.WriteString(id + "\n"); err != nil {
				return err
			}
		}
	}
	return nil
}

// holdWorker takes the lock, prints "H" and holds it until killed (or for
// STATELOCK_HOLD_MS).
func holdWorker() error {
	h, err := Lock(context.Background(), os.Getenv("STATELOCK_STATE"), WithConfigRoot(os.Getenv("STATELOCK_CONFIG")))
	if err != nil {
		return err
	}
	os.Stdout.WriteString("H\n")
	time.Sleep(time.Duration(envInt("STATELOCK_HOLD_MS", 600000)) * time.Millisecond)
	return h.Unlock()
}

// holdTimesWorker is holdWorker printing when it acquired and when it had
// released, on the host's monotonic clock: "H <ns>", "R <ns>".
func holdTimesWorker() error {
	// Every sleep of the wait that ran out with nothing to wake it, with
	// the time its deadline came (before the last look for an event).
	var deadline atomic.Int64
	hook.Set(hook.LockWaitDeadline, func(string) { deadline.Store(wake.Now()) })
	hook.Set(hook.LockWaitTimedOut, func(string) { fmt.Println("T", deadline.Load()) })
	h, err := Lock(context.Background(), os.Getenv("STATELOCK_STATE"), WithConfigRoot(os.Getenv("STATELOCK_CONFIG")),
		WithWait(20*time.Second))
	if err != nil {
		return err
	}
	fmt.Println("H", wake.Now())
	time.Sleep(time.Duration(envInt("STATELOCK_HOLD_MS", 0)) * time.Millisecond)
	if err := h.Unlock(); err != nil {
		return err
	}
	fmt.Println("R", wake.Now())
	// Stay alive (STATELOCK_LINGER_MS): the exit's closes would wake a
	// waiter that missed the release.
	time.Sleep(time.Duration(envInt("STATELOCK_LINGER_MS", 0)) * time.Millisecond)
	return nil
}

// workerCmd returns a re-execution of this test binary in worker mode.
func workerCmd(ctx context.Context, mode string, env ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{workerEnv + "=" + mode}, env...)...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// waitLine starts cmd and waits until it prints want on stdout.
func startAndWaitLine(t *testing.T, cmd *exec.Cmd, want string, timeout time.Duration) *bufio.Scanner {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	got := make(chan bool, 1)
	go func() {
		for sc.Scan() {
			if sc.Text() == want {
				got <- true
				return
			}
		}
		got <- false
	}()
	select {
	case ok := <-got:
		if !ok {
			t.Fatalf("worker exited without printing %q", want)
		}
	case <-time.After(timeout):
		t.Fatalf("worker did not print %q within %s", want, timeout)
	}
	return sc
}

// waitWorker waits STATELOCK_WAIT_MS for a lock that stays held and prints
// the CPU time (user+system, microseconds) the wait cost this process.
func waitWorker() error {
	before, err := cpuTime()
	if err != nil {
		return err
	}
	_, err = Lock(context.Background(), os.Getenv("STATELOCK_STATE"), WithConfigRoot(os.Getenv("STATELOCK_CONFIG")),
		WithWait(time.Duration(envInt("STATELOCK_WAIT_MS", 2000))*time.Millisecond))
	if !errors.Is(err, ErrLocked) {
		return fmt.Errorf("expected a timeout, got %v", err)
	}
	after, err := cpuTime()
	if err != nil {
		return err
	}
	fmt.Println((after - before).Microseconds())
	return nil
}

// slotWorker prints this process's slot and pid.
func slotWorker() error {
	ino, err := liveness.PidfdIno(os.Getpid())
	if err != nil {
		return err
	}
	_, err = fmt.Printf("%d %d\n", slotOf(ino), os.Getpid())
	return err
}
