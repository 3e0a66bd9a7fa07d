//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/exactfs/exactfs/internal/holdlog"
	"github.com/exactfs/exactfs/statelock"
	"github.com/gofrs/flock"
	"golang.org/x/sys/unix"
)

// The ways of doing one increment that the benchmark compares. Each is:
// take the lock, read the counter, write it back durably, release.
const (
	kindGofrs  = "gofrs"       // github.com/gofrs/flock on STATE.flock + durableWrite
	kindFlock  = "flock"       // flock(2) on STATE.flock, opened per cycle + durableWrite
	kindLock   = "lock"        // statelock.Lock + os.ReadFile + durableWrite + Unlock
	kindUpdate = "update"      // statelock.Update (its own Capture and WriteFile; early release)
	kindHeld   = "update-held" // statelock.Update with WithEarlyRelease(false)
	// kindSQLite is the peer users reach for when they want shared state:
	// one row of a SQLite database (STATE.db, journal_mode=WAL,
	// synchronous=FULL, busy_timeout 5 min) read and rewritten in a
	// BEGIN IMMEDIATE transaction, through the pure-Go modernc.org/sqlite.
	// WAL with synchronous=FULL is SQLite's fastest setting in which a
	// committed transaction survives a power cut (the WAL is fsynced at
	// every commit), which is what the durable write promises; WAL with
	// synchronous=NORMAL would skip that fsync and may lose the last
	// commits, and the rollback journal (the default) costs more fsyncs.
	kindSQLite = "sqlite"
	// The group kinds run groupG goroutines in each worker process, each
	// doing its own increments concurrently with the others: group-gofrs
	// with one gofrs/flock handle per goroutine (flock(2) locks belong to
	// the open file, so the goroutines exclude each other as processes do),
	// group-update with statelock.Update per goroutine, which is where
	// group commit of one process's concurrent Updates (SPEC §4.6) applies
	// once statelock has it; until then this measures plain concurrent
	// Updates.
	kindGroupGofrs  = "group-gofrs"
	kindGroupUpdate = "group-update"
	// The read kinds add to every increment a read-only lock cycle of the
	// same worker (take the lock, read the file, release): writers and
	// readers of one state file, as services that poll a shared state
	// are. rw-gofrs reads under a shared flock(2) lock (LOCK_SH, what a
	// careful flock user takes to read); rw-update writes with
	// statelock.Update and reads under statelock.Lock, whose readers'
	// rule (SPEC §4.6) makes sure the bytes it read are durable.
	kindRWGofrs  = "rw-gofrs"
	kindRWUpdate = "rw-update"
)

var kinds = []string{kindGofrs, kindFlock, kindLock, kindUpdate, kindHeld, kindSQLite, kindGroupGofrs, kindGroupUpdate,
	kindRWGofrs, kindRWUpdate}

var kindTitle = map[string]string{
	kindGofrs:       "gofrs/flock",
	kindFlock:       "flock(2)",
	kindLock:        "statelock.Lock + same write",
	kindUpdate:      "statelock.Update",
	kindHeld:        "Update, held through fsync",
	kindSQLite:      "SQLite WAL, FULL",
	kindGroupGofrs:  "group: gofrs/flock per goroutine",
	kindGroupUpdate: "group: statelock.Update",
	kindRWGofrs:     "rw: gofrs/flock write, shared read",
	kindRWUpdate:    "rw: Update, Lock read",
}

// isRW reports whether kind adds a read-only lock cycle to each increment.
func isRW(kind string) bool { return strings.HasPrefix(kind, "rw-") }

// isGroup reports whether kind runs several goroutines per worker.
func isGroup(kind string) bool { return strings.HasPrefix(kind, "group-") }

// workerEnv marks a re-executed copy of this binary as a worker;
// goroutinesEnv gives a group kind's goroutines per worker, holdLogEnv a
// hold log (internal/holdlog) for the worker to append its critical
// sections to (the mixed run with TypeScript workers checks them).
const (
	workerEnv     = "EXACTFS_BENCH_WORKER"
	goroutinesEnv = "EXACTFS_BENCH_GOROUTINES"
	holdLogEnv    = "EXACTFS_BENCH_HOLDLOG"
	// untilEnv names a file: the worker keeps incrementing (K is then a
	// minimum of 0) until that file exists, so that the mixed run's Go
	// side runs exactly as long as its TypeScript side.
	untilEnv = "EXACTFS_BENCH_UNTIL"
)

// counter is the state file: the count and the worker that wrote it last,
// from which hand-offs are counted.
type counter struct {
	N int `json:"n"`
	W int `json:"w"`
}

// workerResult is what a worker prints when it is done.
type workerResult struct {
	StartNs  int64   `json:"start_ns"`
	EndNs    int64   `json:"end_ns"`
	CPUNs    int64   `json:"cpu_ns"`
	Handoffs int     `json:"handoffs"`
	Acquire  []int64 `json:"acquire_ns"` // per increment: asked → old bytes in hand
}

// runWorker is the child: "ready" on stdout, wait for a byte on stdin,
// then K increments (in each of G goroutines for a group kind), then one
// JSON line. Timing and CPU cover the loop only.
func runWorker(args []string) error {
	if len(args) != 5 {
		return fmt.Errorf("worker: want KIND STATE CONFIGROOT K ID, got %q", args)
	}
	kind, state, configRoot := args[0], args[1], args[2]
	k, err := strconv.Atoi(args[3])
	if err != nil {
		return err
	}
	id, err := strconv.Atoi(args[4])
	if err != nil {
		return err
	}
	g := 1
	if isGroup(kind) {
		if g, err = strconv.Atoi(os.Getenv(goroutinesEnv)); err != nil || g < 1 {
			return fmt.Errorf("worker: %s=%q is not a positive number", goroutinesEnv, os.Getenv(goroutinesEnv))
		}
	}
	var log *holdlog.Log
	if p := os.Getenv(holdLogEnv); p != "" {
		if log, err = holdlog.Open(p); err != nil {
			return err
		}
		defer log.Close()
	}
	// One incrementer per goroutine: for group-gofrs that is one flock
	// handle each.
	incs := make([]func(step func([]byte) ([]byte, error)) error, g)
	for i := range incs {
		if incs[i], err = incrementer(kind, state, configRoot, log); err != nil {
			return err
		}
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadByte(); err != nil {
		return fmt.Errorf("worker: waiting for the start: %w", err)
	}
	parts := make([]workerResult, g)
	errs := make([]error, g)
	var wg sync.WaitGroup
	cpu0 := cpuNs()
	start := time.Now().UnixNano()
	for i := range g {
		wg.Go(func() {
			// Goroutine i of worker id is worker (id-1)*g+i+1 for hand-offs.
			parts[i], errs[i] = loop(incs[i], k, (id-1)*g+i+1, os.Getenv(untilEnv))
		})
	}
	wg.Wait()
	res := workerResult{StartNs: start, EndNs: time.Now().UnixNano(), CPUNs: cpuNs() - cpu0}
	// As a program about to exit does (statelock.ReleaseKept): a record
	// this worker keeps for a re-lock that will not come is released now,
	// not left to the workers still running as a dead process's record
	// (which a seated waiter sees at its next poll, 20-100 ms later).
	statelock.ReleaseKept()
	for i := range g {
		if errs[i] != nil {
			return errs[i]
		}
		res.Handoffs += parts[i].Handoffs
		res.Acquire = append(res.Acquire, parts[i].Acquire...)
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// loop does k increments with inc as worker id, or, with until set, as
// many as it can until the file until exists.
func loop(inc func(step func([]byte) ([]byte, error)) error, k, id int, until string) (workerResult, error) {
	res := workerResult{Acquire: make([]int64, 0, k)}
	for i := 0; ; i++ {
		if until == "" && i == k {
			break
		}
		if until != "" {
			if _, err := os.Stat(until); err == nil {
				break
			}
		}
		asked := time.Now()
		step := func(old []byte) ([]byte, error) {
			res.Acquire = append(res.Acquire, int64(time.Since(asked)))
			var c counter
			if len(old) > 0 {
				if err := json.Unmarshal(old, &c); err != nil {
					return nil, fmt.Errorf("the counter is not JSON (%q): %w", old, err)
				}
				if c.W != id {
					res.Handoffs++
				}
			}
			return json.Marshal(counter{N: c.N + 1, W: id})
		}
		if err := inc(step); err != nil {
			return res, err
		}
	}
	return res, nil
}

// incrementer returns one increment of kind: lock, read, step, write,
// unlock. With log, the critical section is recorded in it: enter once the
// lock is held, exit after the durable write and before the release, which
// only the kinds whose release the benchmark makes itself can do.
func incrementer(kind, state, configRoot string, log *holdlog.Log) (func(step func([]byte) ([]byte, error)) error, error) {
	ctx := context.Background()
	opts := []statelock.Option{statelock.WithConfigRoot(configRoot), statelock.WithWait(5 * time.Minute)}
	rw := func(step func([]byte) ([]byte, error)) error { return readWrite(state, step) }
	read := func() error { _, err := os.ReadFile(state); return err }
	if log != nil {
		rw = func(step func([]byte) ([]byte, error)) error {
			if err := log.Enter(); err != nil {
				return err
			}
			if err := readWrite(state, step); err != nil {
				return err // no exit: the check reports an open interval
			}
			return log.Exit()
		}
		switch kind {
		case kindGofrs, kindFlock, kindLock:
		default:
			return nil, fmt.Errorf("a hold log needs a kind whose release the benchmark makes itself (gofrs, flock, lock), not %q", kind)
		}
	}
	switch kind {
	case kindGofrs, kindGroupGofrs:
		fl := flock.New(state + ".flock")
		return func(step func([]byte) ([]byte, error)) error {
			if err := fl.Lock(); err != nil {
				return err
			}
			err := rw(step)
			if uerr := fl.Unlock(); err == nil {
				err = uerr
			}
			return err
		}, nil
	case kindFlock:
		return func(step func([]byte) ([]byte, error)) error {
			f, err := os.OpenFile(state+".flock", os.O_CREATE|os.O_RDWR, 0o600)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
				return err
			}
			err = rw(step)
			if uerr := unix.Flock(int(f.Fd()), unix.LOCK_UN); err == nil {
				err = uerr
			}
			return err
		}, nil
	case kindLock:
		return func(step func([]byte) ([]byte, error)) error {
			h, err := statelock.Lock(ctx, state, opts...)
			if err != nil {
				return err
			}
			err = rw(step)
			if uerr := h.Unlock(); err == nil {
				err = uerr
			}
			return err
		}, nil
	case kindRWGofrs:
		fl := flock.New(state + ".flock")
		return func(step func([]byte) ([]byte, error)) error {
			if err := locked(fl.Lock, fl.Unlock, func() error { return rw(step) }); err != nil {
				return err
			}
			return locked(fl.RLock, fl.Unlock, read)
		}, nil
	case kindRWUpdate:
		return func(step func([]byte) ([]byte, error)) error {
			if err := statelock.Update(ctx, state, step, opts...); err != nil {
				return err
			}
			var h *statelock.Held
			lock := func() (err error) {
				h, err = statelock.Lock(ctx, state, opts...)
				return err
			}
			return locked(lock, func() error { return h.Unlock() }, read)
		}, nil
	case kindUpdate, kindGroupUpdate:
		return func(step func([]byte) ([]byte, error)) error {
			return statelock.Update(ctx, state, step, opts...)
		}, nil
	case kindHeld:
		held := append(opts, statelock.WithEarlyRelease(false))
		return func(step func([]byte) ([]byte, error)) error {
			return statelock.Update(ctx, state, step, held...)
		}, nil
	case kindSQLite:
		return sqliteIncrementer(sqlitePath(state))
	}
	return nil, fmt.Errorf("unknown kind %q (want one of %v)", kind, kinds)
}

// locked runs body between lock and unlock; body's error comes first.
func locked(lock, unlock, body func() error) error {
	if err := lock(); err != nil {
		return err
	}
	err := body()
	if uerr := unlock(); err == nil {
		err = uerr
	}
	return err
}

// readWrite is the critical section of the three hand-written variants:
// read the state file (absent is empty) and replace it durably.
func readWrite(state string, step func([]byte) ([]byte, error)) error {
	old, err := os.ReadFile(state)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	next, err := step(old)
	if err != nil {
		return err
	}
	return durableWrite(state, next)
}

// durableWrite is the write a careful flock user writes by hand: a temp
// file, write, fsync, rename over the name, fsync of the directory.
func durableWrite(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// cpuNs is this process's user plus system CPU time.
func cpuNs() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
