//go:build unix

package statelock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/holdlog"
)

// Group commit (SPEC §4.6) through Update. The mechanism's own exhaustive
// tests are internal/combine's; these check what Update makes of it.

// groupLog is the state of these tests: the ids of the updates applied, in
// order.
type groupLog struct {
	IDs []string `json:"ids"`
}

func parseGroupLog(t testing.TB, b []byte) groupLog {
	var s groupLog
	if len(b) > 0 {
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("state %q: %v", b, err)
		}
	}
	return s
}

// appendID is an update function that appends id, and records the bytes it
// was given and the bytes on disk when it ran.
func appendID(t testing.TB, state, id string, gotOld, onDisk *[]byte) func([]byte) ([]byte, error) {
	return func(old []byte) ([]byte, error) {
		if gotOld != nil {
			*gotOld = append([]byte(nil), old...)
		}
		if onDisk != nil {
			*onDisk, _ = os.ReadFile(state)
		}
		s := parseGroupLog(t, old)
		s.IDs = append(s.IDs, id)
		return json.Marshal(s)
	}
}

// queueUpdates holds the lock from outside the group, starts Updates one
// by one so that their arrival order is known (the first one waits for the
// lock as leader, each next one queues behind it), and returns their
// outcomes' channels and the release of the outside hold.
func queueUpdates(t *testing.T, e *testEnv, fns []func([]byte) ([]byte, error), ctxs []context.Context, extra ...Option) ([]chan error, func()) {
	t.Helper()
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(e.state)
	key := groupKey{path: abs, configRoot: e.configRoot}
	var chs []chan error
	for i, fn := range fns {
		ctx := context.Background()
		if ctxs != nil && ctxs[i] != nil {
			ctx = ctxs[i]
		}
		ch := make(chan error, 1)
		go func() {
			defer func() {
				if v := recover(); v != nil {
					ch <- fmt.Errorf("panicked: %v", v)
				}
			}()
			ch <- Update(ctx, e.state, fn, e.opts(append([]Option{WithWait(WaitForever)}, extra...)...)...)
		}()
		chs = append(chs, ch)
		if i == 0 {
			time.Sleep(20 * time.Millisecond) // the leader is waiting for the lock (or, group commit off, so is everyone)
			continue
		}
		if extra == nil {
			waitUntil(t, fmt.Sprintf("Update %d to queue", i), func() bool { return groups.Queued(key) == i })
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	return chs, func() {
		if err := h.Unlock(); err != nil {
			t.Fatal(err)
		}
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func recv(t *testing.T, ch chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(60 * time.Second):
		t.Fatal("an Update never returned")
		return nil
	}
}

// Updates that queue while the lock is busy run in one lock cycle: in
// arrival order, each function given the previous one's output, while the
// file on disk stays what it was (one read, one write); with
// WithGroupCommit(false) each takes a cycle of its own and finds the
// previous one's output on disk.
func TestGroupCommitOneCycleInArrivalOrder(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprint("group=", on), func(t *testing.T) {
			e := newEnv(t)
			if err := os.WriteFile(e.state, []byte(`{"ids":["init"]}`), 0o600); err != nil {
				t.Fatal(err)
			}
			const n = 6
			old := make([][]byte, n)
			disk := make([][]byte, n)
			var fns []func([]byte) ([]byte, error)
			for i := range n {
				fns = append(fns, appendID(t, e.state, strconv.Itoa(i), &old[i], &disk[i]))
			}
			var extra []Option
			if !on {
				extra = []Option{WithGroupCommit(false)}
			}
			chs, release := queueUpdates(t, e, fns, nil, extra...)
			release()
			for i, ch := range chs {
				if err := recv(t, ch); err != nil {
					t.Fatalf("Update %d: %v", i, err)
				}
			}
			final := parseGroupLog(t, mustRead(t, e.state))
			if len(final.IDs) != n+1 {
				t.Fatalf("final state %v: lost updates", final.IDs)
			}
			if !on {
				for i := range n {
					if string(old[i]) != string(disk[i]) {
						t.Fatalf("group commit off: Update %d was given %s while the file held %s", i, old[i], disk[i])
					}
				}
				return
			}
			want := []string{"init"}
			for i := range n {
				if got := parseGroupLog(t, old[i]).IDs; strings.Join(got, ",") != strings.Join(want, ",") {
					t.Fatalf("Update %d was given %v, want %v (arrival order, each on the previous output)", i, got, want)
				}
				if string(disk[i]) != `{"ids":["init"]}` {
					t.Fatalf("Update %d ran when the file held %s: not one read and one write", i, disk[i])
				}
				want = append(want, strconv.Itoa(i))
			}
			if strings.Join(final.IDs, ",") != strings.Join(want, ",") {
				t.Fatalf("final %v, want %v", final.IDs, want)
			}
		})
	}
}

// Each caller gets its own outcome: an error, an empty result, a panic (in
// its own goroutine, with its value) and a cancellation before its turn go
// to their callers alone; the next function is given the output of the
// last one that succeeded; the lock is free afterwards.
func TestGroupCommitPerCallerOutcomes(t *testing.T) {
	e := newEnv(t)
	errOwn := errors.New("function 1 failed")
	ctx3, cancel3 := context.WithCancel(context.Background())
	var ran3 bool
	var old2, old4 []byte
	panicked := make(chan any, 1)
	fns := []func([]byte) ([]byte, error){
		appendID(t, e.state, "0", nil, nil),
		func([]byte) ([]byte, error) { return nil, errOwn },
		appendID(t, e.state, "2", &old2, nil),
		func(old []byte) ([]byte, error) { ran3 = true; return old, nil },
		appendID(t, e.state, "4", &old4, nil),
		func([]byte) ([]byte, error) { return nil, nil },
		func([]byte) ([]byte, error) { panic("function 6 panicked") },
		func([]byte) ([]byte, error) { return nil, fmt.Errorf("already there: %w", ErrNoChange) },
		appendID(t, e.state, "8", nil, nil),
	}
	ctxs := make([]context.Context, len(fns))
	ctxs[3] = ctx3
	// Function 6's caller recovers its panic itself, to check the value and
	// that it reached this goroutine.
	orig := fns[6]
	fns[6] = func(old []byte) (b []byte, err error) {
		defer func() {
			if v := recover(); v != nil {
				panicked <- v
				panic(v)
			}
		}()
		return orig(old)
	}
	chs, release := queueUpdates(t, e, fns, ctxs)
	cancel3()
	if err := recv(t, chs[3]); !errors.Is(err, ErrLocked) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Update: %v, want a lock wait ended by its context", err)
	}
	release()
	errs := make([]error, len(chs))
	for i, ch := range chs {
		if i != 3 {
			errs[i] = recv(t, ch)
		}
	}
	if ran3 {
		t.Fatal("the function of a caller cancelled before its turn ran")
	}
	if !errors.Is(errs[1], errOwn) || !errors.Is(errs[5], ErrEmptyResult) {
		t.Fatalf("errors %v, %v: want each caller's own", errs[1], errs[5])
	}
	if v := <-panicked; v != "function 6 panicked" || !strings.Contains(errs[6].Error(), "function 6 panicked") {
		t.Fatalf("the panic: %v, its caller got %v", v, errs[6])
	}
	for _, i := range []int{0, 2, 4, 7, 8} {
		if errs[i] != nil {
			t.Fatalf("Update %d: %v", i, errs[i])
		}
	}
	if got := parseGroupLog(t, old2).IDs; strings.Join(got, ",") != "0" {
		t.Fatalf("function 2 was given %v, want [0] (function 1 failed)", got)
	}
	if got := parseGroupLog(t, old4).IDs; strings.Join(got, ",") != "0,2" {
		t.Fatalf("function 4 was given %v, want [0 2]", got)
	}
	if got := parseGroupLog(t, mustRead(t, e.state)).IDs; strings.Join(got, ",") != "0,2,4,8" {
		t.Fatalf("final state %v, want [0 2 4 8]", got)
	}
	h, err := TryLock(e.state, e.opts()...)
	if err != nil {
		t.Fatalf("the lock is not free after the batch: %v", err)
	}
	h.Unlock()
}

// A leader whose context ends while it waits for the lock fails alone: the
// next caller takes the lock with its own context, and the others' updates
// are written. A queued caller whose wait budget runs out gets the
// timeout a lone Update would.
func TestGroupCommitLeaderCancelledAndQueuedBudget(t *testing.T) {
	e := newEnv(t)
	ctx0, cancel0 := context.WithCancel(context.Background())
	var ran0 bool
	fns := []func([]byte) ([]byte, error){
		func(old []byte) ([]byte, error) { ran0 = true; return old, nil },
		appendID(t, e.state, "1", nil, nil),
		appendID(t, e.state, "2", nil, nil),
	}
	chs, release := queueUpdates(t, e, fns, []context.Context{ctx0, nil, nil})

	// A caller with a short budget, behind them.
	short := make(chan error, 1)
	var ranShort bool
	go func() {
		short <- Update(context.Background(), e.state, func(old []byte) ([]byte, error) { ranShort = true; return old, nil },
			e.opts(WithWait(50*time.Millisecond))...)
	}()
	if err := recv(t, short); !errors.Is(err, ErrLocked) || exactCode(err) != ReasonAcquireTimeout || ranShort {
		t.Fatalf("queued caller out of budget: %v (ran %v), want acquire_timeout", err, ranShort)
	}

	cancel0()
	if err := recv(t, chs[0]); !errors.Is(err, ErrLocked) || !errors.Is(err, context.Canceled) {
		t.Fatalf("leader: %v, want its own context's end", err)
	}
	release()
	for _, i := range []int{1, 2} {
		if err := recv(t, chs[i]); err != nil {
			t.Fatalf("Update %d: %v", i, err)
		}
	}
	if ran0 {
		t.Fatal("the cancelled leader's function ran")
	}
	if got := parseGroupLog(t, mustRead(t, e.state)).IDs; strings.Join(got, ",") != "1,2" {
		t.Fatalf("final state %v, want [1 2]", got)
	}
}

func exactCode(err error) Reason {
	var le *LockError
	if errors.As(err, &le) {
		return le.Code
	}
	return ""
}

// Many goroutines on one file, half of them by a relative path and half by
// the absolute one (one group: the key is the absolute, cleaned path): no
// update is lost, and no group is kept afterwards. (Spellings that do not
// clean to one absolute path, such as a bind mount, give two groups, which
// the on-disk lock excludes like two processes.)
func TestGroupCommitManyGoroutinesTwoSpellings(t *testing.T) {
	e := newEnv(t)
	t.Chdir(filepath.Dir(e.dir))
	spellings := []string{e.state, filepath.Join(".", filepath.Base(e.dir), ".", "state.json")}
	const goroutines, per = 16, 25
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			state := spellings[g%2]
			for i := range per {
				id := fmt.Sprintf("g%d-%d", g, i)
				if err := Update(context.Background(), state, appendID(t, state, id, nil, nil), e.opts(WithWait(time.Minute))...); err != nil {
					t.Errorf("%s: %v", id, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	checkGroupLog(t, parseGroupLog(t, mustRead(t, e.state)).IDs, goroutines*per)
	if n := groups.Len(); n != 0 {
		t.Fatalf("%d groups kept after every Update returned", n)
	}
}

// checkGroupLog: want ids, each once.
func checkGroupLog(t *testing.T, ids []string, want int) {
	t.Helper()
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("update %s applied twice", id)
		}
		seen[id] = true
	}
	if len(ids) != want {
		t.Fatalf("%d updates in the state, want %d: lost updates", len(ids), want)
	}
}

// groupWorkerEnv makes the test binary a group-commit worker (init, below):
// STATELOCK_GROUP_GOROUTINES goroutines each run STATELOCK_GROUP_N Updates
// of STATELOCK_STATE, appending STATELOCK_PREFIX-g-i.
const groupWorkerEnv = "STATELOCK_GROUP_WORKER"

func init() {
	if os.Getenv(groupWorkerEnv) == "" {
		return
	}
	if err := groupWorker(); err != nil {
		fmt.Fprintln(os.Stderr, "group worker:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func groupWorker() error {
	state := os.Getenv("STATELOCK_STATE")
	opts := []Option{WithConfigRoot(os.Getenv("STATELOCK_CONFIG")), WithWait(5 * time.Minute)}
	if os.Getenv("STATELOCK_GROUP_OFF") != "" {
		opts = append(opts, WithGroupCommit(false))
	}
	goroutines, n := envInt("STATELOCK_GROUP_GOROUTINES", 4), envInt("STATELOCK_GROUP_N", 10)
	// Every function's run is a hold interval: under the lock, so no two
	// may overlap, in this process or across processes.
	log, err := holdlog.Open(os.Getenv("STATELOCK_LOG"))
	if err != nil {
		return err
	}
	errs := make(chan error, goroutines)
	for g := range goroutines {
		go func() {
			for i := range n {
				id := fmt.Sprintf("%s-%d-%d", os.Getenv("STATELOCK_PREFIX"), g, i)
				err := Update(context.Background(), state, func(old []byte) (_ []byte, err error) {
					if err := log.Enter(); err != nil {
						return nil, err
					}
					defer func() {
						if xerr := log.Exit(); err == nil {
							err = xerr
						}
					}()
					var s groupLog
					if len(old) > 0 {
						if err := json.Unmarshal(old, &s); err != nil {
							return nil, err
						}
					}
					s.IDs = append(s.IDs, id)
					return json.Marshal(s)
				}, opts...)
				if err != nil {
					errs <- fmt.Errorf("%s: %w", id, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range goroutines {
		if err := <-errs; err != nil {
			return err
		}
	}
	return nil
}

// N goroutines in each of M real processes, with group commit (and one
// process without it), lose no update, and no two update functions ever
// run at once (hold intervals by CLOCK_MONOTONIC, one log per process).
func TestGroupCommitProcessesLoseNoUpdate(t *testing.T) {
	e := newEnv(t)
	const procs, goroutines, per = 3, 4, 15
	var cmds []*exec.Cmd
	var logs []string
	for p := range procs {
		logs = append(logs, filepath.Join(t.TempDir(), "hold.log"))
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), groupWorkerEnv+"=1", "STATELOCK_STATE="+e.state, "STATELOCK_CONFIG="+e.configRoot,
			"STATELOCK_PREFIX=p"+strconv.Itoa(p), "STATELOCK_GROUP_GOROUTINES="+strconv.Itoa(goroutines),
			"STATELOCK_GROUP_N="+strconv.Itoa(per), "STATELOCK_LOG="+logs[p])
		if p == 0 {
			cmd.Env = append(cmd.Env, "STATELOCK_GROUP_OFF=1")
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("worker: %v", err)
		}
	}
	checkGroupLog(t, parseGroupLog(t, mustRead(t, e.state)).IDs, procs*goroutines*per)
	r, err := holdlog.Check(false, logs...)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Intervals) != procs*goroutines*per || r.Processes != procs {
		t.Fatalf("hold logs: %v, want %d intervals from %d processes", r, procs*goroutines*per, procs)
	}
	t.Log(r)
}
