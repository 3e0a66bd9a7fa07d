//go:build unix

package statelock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
)

// handoffHoldWorker takes the lock, prints "held", waits until
// STATELOCK_SEATED waiters (default 1) are seated in the mailbox, arms
// STATELOCK_KILL_HOOK (a SIGKILL of itself) if set, and releases. With
// STATELOCK_HOLD_UPDATE=1 it holds the lock inside an Update instead,
// whose function does all that and returns STATELOCK_HOLD_UPDATE_BYTES
// (early release: the hand-off comes at the rename).
func handoffHoldWorker() error {
	state := os.Getenv("STATELOCK_STATE")
	seated := func() error {
		fmt.Println("held")
		want := envInt("STATELOCK_SEATED", 1)
		for start := time.Now(); seatsWaiting(filepath.Dir(state), filepath.Base(state)+lockSuffix) < want; {
			if time.Since(start) > time.Minute {
				return errors.New("no waiter was seated")
			}
			time.Sleep(2 * time.Millisecond)
		}
		if k := os.Getenv("STATELOCK_KILL_HOOK"); k != "" {
			hook.Set(k, func(string) { syscall.Kill(os.Getpid(), syscall.SIGKILL) })
		}
		return nil
	}
	if os.Getenv("STATELOCK_HOLD_UPDATE") == "1" {
		err := Update(context.Background(), state, func([]byte) ([]byte, error) {
			if err := seated(); err != nil {
				return nil, err
			}
			return []byte(os.Getenv("STATELOCK_HOLD_UPDATE_BYTES")), nil
		}, WithConfigRoot(os.Getenv("STATELOCK_CONFIG")))
		if err != nil {
			return err
		}
		fmt.Println("released")
		return nil
	}
	h, err := Lock(context.Background(), state, WithConfigRoot(os.Getenv("STATELOCK_CONFIG")))
	if err != nil {
		return err
	}
	if err := seated(); err != nil {
		return err
	}
	if err := h.Unlock(); err != nil {
		return err
	}
	fmt.Println("released")
	return nil
}

// handoffWaitWorker arms STATELOCK_KILL_HOOK, prints "waiting", and locks.
func handoffWaitWorker() error {
	if k := os.Getenv("STATELOCK_KILL_HOOK"); k != "" {
		hook.Set(k, func(string) { syscall.Kill(os.Getpid(), syscall.SIGKILL) })
	}
	fmt.Println("waiting")
	h, err := Lock(context.Background(), os.Getenv("STATELOCK_STATE"), WithConfigRoot(os.Getenv("STATELOCK_CONFIG")),
		WithWait(time.Minute))
	if err != nil {
		return err
	}
	fmt.Println("acquired")
	return h.Unlock()
}
