//go:build unix

package statelock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/statelock/internal/wake"
)

// stickyWorker locks STATELOCK_STATE STATELOCK_LOCKS times in a row (1: a
// one-shot process; 2 or more: one that re-locks) with sticky ownership's
// idle time made an hour, and prints "kept" or "released" after its last
// Unlock, by whether that release kept the lock. Then it sleeps, or exits
// when STATELOCK_THEN is "exit".
func stickyWorker() error {
	var kept atomic.Int32
	hook.Set(hook.LockStickyKept, func(string) { kept.Add(1) })
	state, cfg := os.Getenv("STATELOCK_STATE"), os.Getenv("STATELOCK_CONFIG")
	n := envInt("STATELOCK_LOCKS", 2)
	for i := range n {
		kept.Store(0)
		h, err := Lock(context.Background(), state, WithConfigRoot(cfg), WithWait(time.Minute),
			withPolicy(func(p *wake.Policy) { p.StickyIdle = time.Hour }))
		if err != nil {
			return err
		}
		if err := h.Unlock(); err != nil {
			return err
		}
		if i == n-1 {
			if kept.Load() > 0 {
				fmt.Println("kept")
			} else {
				fmt.Println("released")
			}
		}
	}
	if os.Getenv("STATELOCK_THEN") == "exit" {
		os.Exit(0) // keeping the lock (not workerExit)
	}
	time.Sleep(time.Minute)
	return errors.New("not killed within a minute")
}
