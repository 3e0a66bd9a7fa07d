package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// demoWorker is the controller's view of one worker across its incarnations.
type demoWorker struct {
	id          int
	next        int // first update not yet acknowledged
	incarnation int
	proc        *os.Process
	stdin       io.WriteCloser
	pid         int
	last        string // the last event of the current incarnation
	armed       bool   // the chaos loop will kill it at its next enter
	killed      bool   // this incarnation was killed by us
	killedAt    int64  // CLOCK_MONOTONIC of the kill
	holdLog     string // the current incarnation's hold log
	stderr      bytes.Buffer
}

// demoRun is the shared state of one demo run.
type demoRun struct {
	o        *demoOptions
	e        *env
	dir      string
	state    string
	hostID   string
	self     string
	rng      *rand.Rand
	start    time.Time
	expected int

	mu            sync.Mutex
	workers       []*demoWorker
	holdLogs      []string
	acked         map[string]int // id -> acknowledgements (new or dup)
	ackCount      int
	dups          int // redo of an update a killed predecessor had written
	retries       int
	acquire       []int64
	enters        []int64 // CLOCK_MONOTONIC of every enter
	lastEnter     int64
	stopping      bool // no more restarts: the run is being torn down
	kills         int
	holderKills   []int64          // CLOCK_MONOTONIC of kills that landed while the victim held the lock
	killedHolds   map[string]int64 // hold log of an incarnation killed holding the lock -> its kill
	failures      []string
	lastProgress  time.Time
	running       int
	workerExited  chan struct{}
	criticalCount int
}

// run starts the workers, runs the chaos loop, restarts killed workers and
// returns when every worker has finished its updates.
func (r *demoRun) run(ctx context.Context) error {
	r.mu.Lock()
	for i := range r.o.workers {
		w := &demoWorker{id: i}
		r.workers = append(r.workers, w)
		if err := r.startLocked(w); err != nil {
			r.mu.Unlock()
			r.killAll()
			return err
		}
	}
	r.mu.Unlock()

	progress := time.NewTicker(100 * time.Millisecond)
	defer progress.Stop()
	const stallLimit = 30 * time.Second
	for {
		select {
		case <-ctx.Done():
			r.killAll()
			fmt.Fprintln(r.e.stderr, "\nexactfs demo: interrupted; workers stopped")
			return exitStatus(130)
		case <-progress.C:
			r.printProgress()
			r.mu.Lock()
			stalled := time.Since(r.lastProgress) > stallLimit
			r.mu.Unlock()
			if stalled {
				r.killAll()
				cfg := filepath.Join(r.dir, "config")
				return fmt.Errorf("no update was acknowledged for %v: the lock is stuck. The demo's files are kept in %s; see\n  exactfs status --config-root %s %s\n  exactfs recover --config-root %s %s", stallLimit, r.dir, cfg, r.state, cfg, r.state)
			}
		case <-r.workerExited:
			r.mu.Lock()
			done := r.running == 0
			fails := len(r.failures)
			r.mu.Unlock()
			if fails > 0 {
				r.killAll()
				return fmt.Errorf("a worker failed:\n%s", strings.Join(r.failures, "\n"))
			}
			if done {
				return nil
			}
		}
	}
}

// startLocked starts the next incarnation of w for its remaining updates.
func (r *demoRun) startLocked(w *demoWorker) error {
	w.incarnation++
	holdLog := filepath.Join(r.dir, fmt.Sprintf("holds-%d-%d.log", w.id, w.incarnation))
	r.holdLogs = append(r.holdLogs, holdLog)
	w.holdLog = holdLog
	cmd := exec.Command(r.self, demoWorkerCommand,
		"--state", r.state, "--hold-log", holdLog, "--host-id", r.hostID,
		"--worker", strconv.Itoa(w.id), "--from", strconv.Itoa(w.next), "--to", strconv.Itoa(r.o.updates))
	w.stderr.Reset()
	cmd.Stderr = &w.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting worker %d: %w", w.id, err)
	}
	w.proc, w.stdin, w.pid, w.last, w.armed, w.killed = cmd.Process, in, cmd.Process.Pid, "", false, false
	r.running++
	go r.follow(w, cmd, out)
	return nil
}

// follow reads one incarnation's events until it exits, then restarts it if
// the chaos loop killed it.
func (r *demoRun) follow(w *demoWorker, cmd *exec.Cmd, out io.Reader) {
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		ev, ok := parseDemoEvent(sc.Text())
		r.mu.Lock()
		if !ok {
			r.failures = append(r.failures, fmt.Sprintf("worker %d: unexpected output %q", w.id, sc.Text()))
			r.mu.Unlock()
			continue
		}
		r.eventLocked(w, ev)
		r.mu.Unlock()
	}
	werr := cmd.Wait()
	r.exited(w, werr)
	// Outside the lock: the main loop takes it on every receive.
	r.workerExited <- struct{}{}
}

// exited accounts for the end of one incarnation of w and restarts it if the
// chaos loop killed it.
func (r *demoRun) exited(w *demoWorker, werr error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w.stdin.Close()
	r.running--
	switch {
	case w.killed:
		if w.last == "enter" || w.last == "paused" || w.last == "done" {
			// It died holding the lock: its owner record names a dead
			// process, which the next worker must reclaim.
			r.holderKills = append(r.holderKills, w.killedAt)
			if r.killedHolds == nil {
				r.killedHolds = map[string]int64{}
			}
			r.killedHolds[w.holdLog] = w.killedAt
		}
		if w.next < r.o.updates && !r.stopping {
			if err := r.startLocked(w); err != nil {
				r.failures = append(r.failures, err.Error())
			}
		}
	case werr != nil:
		r.failures = append(r.failures, fmt.Sprintf("worker %d (pid %d) failed: %v\n%s", w.id, w.pid, werr, strings.TrimSpace(w.stderr.String())))
	case w.next != r.o.updates:
		r.failures = append(r.failures, fmt.Sprintf("worker %d exited after %d of %d updates", w.id, w.next, r.o.updates))
	}
}

func (r *demoRun) eventLocked(w *demoWorker, ev demoEvent) {
	w.last = ev.kind
	switch ev.kind {
	case "enter":
		r.criticalCount++
		r.acquire = append(r.acquire, ev.acquire)
		r.enters = append(r.enters, ev.mono)
		r.lastEnter = max(r.lastEnter, ev.mono)
		if w.armed && !w.killed && r.o.anywhere {
			// Kill at a random instant from now to a few milliseconds on:
			// inside the transform, during the durable write after it, or
			// while the lock is released.
			r.killLocked(w, time.Duration(r.rng.Int64N(int64(3*time.Millisecond))))
		}
	case "paused":
		if w.armed && !w.killed {
			r.killLocked(w, 0)
		}
	case "ack":
		id := strconv.Itoa(w.id) + "." + strconv.Itoa(ev.k)
		r.acked[id]++
		r.ackCount++
		if ev.dup {
			r.dups++
		}
		w.next = ev.k + 1
		r.lastProgress = time.Now()
		if r.o.chaos && r.ackCount%r.o.killEvery == 0 {
			r.armLocked()
		}
	case "retry":
		r.retries++
	}
}

func (r *demoRun) printProgress() {
	if !r.e.stderrTTY {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	reclaimed := 0
	for _, k := range r.holderKills {
		if k < r.lastEnter {
			reclaimed++
		}
	}
	fmt.Fprintf(r.e.stderr, "\r\033[K  updates %d/%d   kills %d   reclaims %d   %.1fs",
		len(r.acked), r.expected, r.kills, reclaimed, time.Since(r.start).Seconds())
}
