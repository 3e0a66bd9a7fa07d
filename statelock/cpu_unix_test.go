//go:build unix

package statelock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/internal/sys"
	"github.com/exactfs/exactfs/statelock/internal/wake"
)

// cpuTime is this process's user plus system CPU time.
func cpuTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// waitReport is what waitCPUWorker prints: one wait, as the waiter's own
// process saw it.
type waitReport struct {
	CPU        time.Duration `json:"cpu_ns"`     // getrusage(RUSAGE_SELF), user+system, over the Lock call
	Elapsed    time.Duration `json:"elapsed_ns"` // of the Lock call
	Acquired   bool          `json:"acquired"`
	Err        string        `json:"err,omitempty"`
	Attempts   int           `json:"attempts"`    // hook.LockAttempt
	Recent     []int64       `json:"recent"`      // CLOCK_MONOTONIC of the last recentMax attempts
	AcquiredAt int64         `json:"acquired_at"` // CLOCK_MONOTONIC when Lock returned the lock
	Unchanged  int           `json:"unchanged"`   // wakes that found nothing changed (hook.LockWaitUnchanged)
	TimedOut   int           `json:"timed_out"`   // sleeps that ran to their deadline (hook.LockWaitTimedOut)
}

// recentMax is how many attempt times a waitReport keeps (a spinning
// waiter makes thousands).
const recentMax = 64

// waitCPUWorker makes one Lock call with a budget of STATELOCK_WAIT_MS
// (with no inotify watch when STATELOCK_NO_WAKER is 1), after printing "W" (so the parent knows it is about to wait), and
// prints a waitReport as JSON. A lock it takes is released at once.
func waitCPUWorker() error {
	var (
		mu sync.Mutex
		r  waitReport
	)
	defer hook.Set(hook.LockAttempt, func(string) {
		ns, _ := sys.MonotonicNs()
		mu.Lock()
		r.Attempts++
		if len(r.Recent) == recentMax {
			r.Recent = append(r.Recent[:0], r.Recent[1:]...)
		}
		r.Recent = append(r.Recent, ns)
		mu.Unlock()
	})()
	defer hook.Set(hook.LockWaitUnchanged, func(string) { mu.Lock(); r.Unchanged++; mu.Unlock() })()
	defer hook.Set(hook.LockWaitTimedOut, func(string) { mu.Lock(); r.TimedOut++; mu.Unlock() })()
	// STATELOCK_NO_WAKER=1: wait as where inotify is unavailable.
	watch := withPolicy(func(p *wake.Policy) { p.Watch = os.Getenv("STATELOCK_NO_WAKER") != "1" })
	os.Stdout.WriteString("W\n")
	before, err := cpuTime()
	if err != nil {
		return err
	}
	start := time.Now()
	h, err := Lock(context.Background(), os.Getenv("STATELOCK_STATE"), WithConfigRoot(os.Getenv("STATELOCK_CONFIG")),
		WithWait(time.Duration(envInt("STATELOCK_WAIT_MS", 2000))*time.Millisecond), watch)
	at, _ := sys.MonotonicNs()
	elapsed := time.Since(start)
	after, cerr := cpuTime()
	if cerr != nil {
		return cerr
	}
	mu.Lock()
	defer mu.Unlock()
	r.CPU, r.Elapsed = after-before, elapsed
	switch {
	case err == nil:
		r.Acquired, r.AcquiredAt = true, at
		if err := h.Unlock(); err != nil {
			return err
		}
	case errors.Is(err, ErrLocked):
		r.Err = err.Error()
	default:
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	fmt.Printf("%s\n", b)
	return nil
}
