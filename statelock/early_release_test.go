//go:build unix

package statelock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/internal/tsseed"
)

// earlyWorker increments the counter at STATELOCK_STATE with Update
// (early release, the default) STATELOCK_N times, or until an Update fails
// (the power cut) when STATELOCK_N is unset, printing each value it wrote
// once its Update has returned nil.
func earlyWorker() error {
	state := os.Getenv("STATELOCK_STATE")
	n := envInt("STATELOCK_N", 0)
	opts := []Option{WithConfigRoot(os.Getenv("STATELOCK_CONFIG")), WithWait(time.Minute)}
	for i := 0; n == 0 || i < n; i++ {
		var wrote int
		err := Update(context.Background(), state, func(old []byte) ([]byte, error) {
			s, err := parseCounter(old)
			if err != nil {
				return nil, err
			}
			wrote = s.N + 1
			return []byte(`{"n":` + strconv.Itoa(wrote) + `}`), nil
		}, opts...)
		if err != nil && n > 0 {
			return err
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "early worker stops:", err)
			return nil
		}
		fmt.Println(wrote)
	}
	return nil
}

// TestInteropEarlyRelease: two TypeScript workers and two Go workers
// using Update with early release increment one counter; none of the 100
// increments is lost, so a TypeScript peer never takes the lock in a way
// that loses a Go update whose fsync is still running, and vice versa.
func TestInteropEarlyRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("interop test skipped in -short mode")
	}
	const each = 25
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var cmds []*exec.Cmd
	for range 2 {
		cmds = append(cmds, tsseed.Command(t, e.configRoot, e.state, each, 0, ""))
		cmds = append(cmds, workerCmd(ctx, "early", "STATELOCK_STATE="+e.state, "STATELOCK_CONFIG="+e.configRoot,
			"STATELOCK_N="+strconv.Itoa(each)))
	}
	outs := make([]*bytes.Buffer, len(cmds))
	for i, cmd := range cmds {
		outs[i] = &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("worker %d: %v\n%s", i, err, outs[i])
		}
	}
	s, err := parseCounter(mustRead(t, e.state))
	if err != nil {
		t.Fatal(err)
	}
	if s.N != 4*each {
		t.Fatalf("counter is %d after %d increments by TypeScript and Go (early release) workers: updates were lost", s.N, 4*each)
	}
}

func incrementCounter(old []byte) ([]byte, error) {
	s, err := parseCounter(old)
	if err != nil {
		return nil, err
	}
	return []byte(`{"n":` + strconv.Itoa(s.N+1) + `}`), nil
}

// TestEarlyReleasePoint: by default the lock is free once the new state
// file is at its name and before the directory fsync (another caller's
// TryLock succeeds there, and finds the new bytes); with
// WithEarlyRelease(false) it is still held at that point.
func TestEarlyReleasePoint(t *testing.T) {
	for _, early := range []bool{true, false} {
		t.Run(fmt.Sprintf("early=%v", early), func(t *testing.T) {
			e := newEnv(t)
			var tried bool
			var tryErr error
			var seen []byte
			defer hook.Set(hook.Committed, func(path string) {
				if path != e.state || tried {
					return
				}
				tried = true
				h, err := TryLock(e.state, e.opts()...)
				tryErr = err
				if err == nil {
					seen, _ = os.ReadFile(e.state)
					if err := h.Unlock(); err != nil {
						t.Error(err)
					}
				}
			})()
			if err := Update(context.Background(), e.state, incrementCounter, e.opts(WithEarlyRelease(early))...); err != nil {
				t.Fatal(err)
			}
			if !tried {
				t.Fatal("the hook after the commit never ran")
			}
			switch {
			case early && tryErr != nil:
				t.Fatalf("after the rename, before the directory fsync, the lock should be free: %v", tryErr)
			case early && string(seen) != `{"n":1}`:
				t.Fatalf("the next holder should see the new bytes there, saw %q", seen)
			case !early && !errors.Is(tryErr, ErrLocked):
				t.Fatalf("WithEarlyRelease(false): the lock should still be held before the directory fsync; TryLock: %v", tryErr)
			}
		})
	}
}
