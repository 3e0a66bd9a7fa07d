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
	"syscall"
	"time"

	"github.com/exactfs/exactfs/statelock"
	"github.com/gofrs/flock"
	"golang.org/x/sys/unix"
)

// The four ways of doing one increment that the benchmark compares. Each
// is: take the lock, read the counter, write it back durably, release.
const (
	kindGofrs  = "gofrs"       // github.com/gofrs/flock on STATE.flock + durableWrite
	kindFlock  = "flock"       // flock(2) on STATE.flock, opened per cycle + durableWrite
	kindLock   = "lock"        // statelock.Lock + os.ReadFile + durableWrite + Unlock
	kindUpdate = "update"      // statelock.Update (its own Capture and WriteFile; early release)
	kindHeld   = "update-held" // statelock.Update with WithEarlyRelease(false)
)

var kinds = []string{kindGofrs, kindFlock, kindLock, kindUpdate, kindHeld}

var kindTitle = map[string]string{
	kindGofrs:  "gofrs/flock",
	kindFlock:  "flock(2)",
	kindLock:   "statelock.Lock + same write",
	kindUpdate: "statelock.Update",
	kindHeld:   "Update, held through fsync",
}

// workerEnv marks a re-executed copy of this binary as a worker.
const workerEnv = "EXACTFS_BENCH_WORKER"

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
// then K increments, then one JSON line. Timing and CPU cover the loop only.
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
	inc, err := incrementer(kind, state, configRoot)
	if err != nil {
		return err
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadByte(); err != nil {
		return fmt.Errorf("worker: waiting for the start: %w", err)
	}
	res := workerResult{Acquire: make([]int64, 0, k)}
	cpu0 := cpuNs()
	res.StartNs = time.Now().UnixNano()
	for range k {
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
			return err
		}
	}
	res.EndNs = time.Now().UnixNano()
	res.CPUNs = cpuNs() - cpu0
	return json.NewEncoder(os.Stdout).Encode(res)
}

// incrementer returns one increment of kind: lock, read, step, write, unlock.
func incrementer(kind, state, configRoot string) (func(step func([]byte) ([]byte, error)) error, error) {
	ctx := context.Background()
	opts := []statelock.Option{statelock.WithConfigRoot(configRoot), statelock.WithWait(5 * time.Minute)}
	switch kind {
	case kindGofrs:
		fl := flock.New(state + ".flock")
		return func(step func([]byte) ([]byte, error)) error {
			if err := fl.Lock(); err != nil {
				return err
			}
			err := readWrite(state, step)
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
			err = readWrite(state, step)
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
			err = readWrite(state, step)
			if uerr := h.Unlock(); err == nil {
				err = uerr
			}
			return err
		}, nil
	case kindUpdate:
		return func(step func([]byte) ([]byte, error)) error {
			return statelock.Update(ctx, state, step, opts...)
		}, nil
	case kindHeld:
		held := append(opts, statelock.WithEarlyRelease(false))
		return func(step func([]byte) ([]byte, error)) error {
			return statelock.Update(ctx, state, step, held...)
		}, nil
	}
	return nil, fmt.Errorf("unknown kind %q (want one of %v)", kind, kinds)
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
