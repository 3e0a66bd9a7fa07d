//go:build !exactfs_portable

package statelock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
)

// The workers of TestPowerCutCohort. They are dispatched from init, not
// from TestMain's switch (worker_test.go), so that this test lives in files
// of its own; the variable is a different one, so the two never meet.
const powerCutWorkerEnv = "STATELOCK_POWERCUT_WORKER"

func init() {
	mode := os.Getenv(powerCutWorkerEnv)
	if mode == "" {
		return
	}
	var err error
	switch mode {
	case "writer":
		err = powerCutWriter()
	case "reader":
		err = powerCutReader()
	case "once":
		// One Update, in a process of its own (TestPowerCutCohort's first
		// one and Go's take after each cut): the test process outlives
		// the cuts, so its record must never be among the bytes a cut can
		// bring back in F.lock (powerCutTakeAfter).
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err = Update(ctx, os.Getenv("STATELOCK_STATE"), incrementCounter, WithConfigRoot(os.Getenv("STATELOCK_CONFIG")), WithWait(30*time.Second))
	default:
		err = fmt.Errorf("unknown power-cut worker mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "power-cut worker:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// powerCutOut writes the worker's report lines to the parent, one write(2)
// each (shorter than PIPE_BUF, so lines of concurrent goroutines never
// interleave):
//
//	a N  an Update that wrote N returned nil (acknowledged)
//	r N  a read-only holder read N and its Lock/With returned nil
//	h    this process entered the lock through a direct hand-off
//	q    an Update of this process timed its directory fsync to pair
//	     (pairsync.go)
var powerCutOut sync.Mutex

func powerCutLine(s string) {
	powerCutOut.Lock()
	defer powerCutOut.Unlock()
	os.Stdout.WriteString(s + "\n")
}

// powerCutCommon reports every hand-off this process accepts ("h") and
// every readers' rule kept by the granter's promised fsync instead of one
// of its own ("p", readsync.go), and, with
// STATELOCK_SLOW_SYNC_MS=k, sleeps up to k ms (in half of the writes) at
// hook.Committed: after the rename and the early release, before the
// directory fsync. That is a slow disk's fsync, and it is the window the
// guarantees under test are about: the next holder (handed the lock
// directly) already sees bytes that a cut would still erase.
func powerCutCommon(state string) {
	hook.Set(hook.LockHandoffAccepted, func(string) { powerCutLine("h") })
	hook.Set(hook.LockReadersRulePromise, func(string) { powerCutLine("p") })
	hook.Set(hook.LockPairWait, func(string) { powerCutLine("q") })
	if k := envInt("STATELOCK_SLOW_SYNC_MS", 0); k > 0 {
		hook.Set(hook.Committed, func(p string) {
			if filepath.Base(p) == filepath.Base(state) && rand.IntN(2) == 0 {
				time.Sleep(time.Duration(rand.IntN(k*1000)+1) * time.Microsecond)
			}
		})
	}
}

// powerCutWriter runs STATELOCK_GOROUTINES (default 2) goroutines, each
// incrementing the counter with Update in a loop (so group commit joins
// them), until an Update fails (the cut) or the process is killed.
func powerCutWriter() error {
	state := os.Getenv("STATELOCK_STATE")
	opts := []Option{WithConfigRoot(os.Getenv("STATELOCK_CONFIG")), WithWait(time.Minute)}
	powerCutCommon(state)
	var wg sync.WaitGroup
	for range envInt("STATELOCK_GOROUTINES", 2) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				var wrote int
				err := Update(context.Background(), state, func(old []byte) ([]byte, error) {
					s, err := parseCounter(old)
					if err != nil {
						return nil, err
					}
					wrote = s.N + 1
					return []byte(`{"n":` + strconv.Itoa(wrote) + `}`), nil
				}, opts...)
				if err != nil {
					fmt.Fprintln(os.Stderr, "writer stops:", err)
					return
				}
				powerCutLine("a " + strconv.Itoa(wrote))
			}
		}()
	}
	wg.Wait()
	return nil
}

// powerCutReader takes the lock read-only in a loop, alternately through
// With and through Lock/Unlock, reads the counter under it, and reports
// what it read once the call has returned nil. It stops at the first
// failure (the cut).
func powerCutReader() error {
	state := os.Getenv("STATELOCK_STATE")
	opts := []Option{WithConfigRoot(os.Getenv("STATELOCK_CONFIG")), WithWait(time.Minute)}
	powerCutCommon(state)
	read := func() (int, error) {
		b, err := os.ReadFile(state)
		if err != nil {
			return 0, err
		}
		s, err := parseCounter(b)
		if err != nil {
			return 0, fmt.Errorf("the state file read under the lock is not whole (%q): %w", b, err)
		}
		return s.N, nil
	}
	for i := 0; ; i++ {
		var n int
		var err error
		if i%2 == 0 {
			err = With(context.Background(), state, func() error {
				var rerr error
				n, rerr = read()
				return rerr
			}, opts...)
		} else {
			var h *Held
			if h, err = Lock(context.Background(), state, opts...); err == nil {
				var rerr error
				n, rerr = read()
				if uerr := h.Unlock(); rerr == nil {
					rerr = uerr
				}
				err = rerr
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "reader stops:", err)
			return nil
		}
		powerCutLine("r " + strconv.Itoa(n))
	}
}
