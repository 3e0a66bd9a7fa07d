package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/holdlog"
	"github.com/exactfs/exactfs/liveness"
	"github.com/exactfs/exactfs/statelock"
)

type demoOptions struct {
	workers   int
	updates   int
	chaos     bool
	dir       string
	killEvery int
	anywhere  bool
	keep      bool
	seed      uint64
}

func init() {
	register(&command{
		name:    "demo",
		local:   true,
		summary: "watch N processes update one state file while a chaos loop SIGKILLs them: nothing is lost",
		usage:   "demo [--workers N] [--updates M] [--chaos=false] [--dir DIR]",
		help: `Start N worker processes (this binary, re-executed) that each apply M
statelock.Update calls to one JSON state file in a fresh temporary directory.
Each update appends a unique id ("worker.update") to the file. Meanwhile a
chaos loop picks a random worker, waits until it has entered its critical
section (it holds the lock and is about to transform the state), and kills it
with SIGKILL, at a random instant inside the critical section or during the
durable write that follows; then it restarts the worker to finish its
remaining updates. A restarted worker redoes the update it never saw
acknowledged; the id makes that redo a no-op if its predecessor had already
written it.

Every worker records when it enters and leaves its critical section with
CLOCK_MONOTONIC (internal/holdlog format), and the demo checks afterwards:

  lost updates          acknowledged ids missing from the state file      must be 0
  duplicated updates    ids present more than once                        must be 0
  overlapping holds     two workers inside at the same instant            must be 0
  found = expected      the state file holds exactly N*M ids, and parses
  reclaims              a lock left by a killed holder was taken over by
                        the next worker at once (its owner provably dead),
                        not after the 5 s wait budget

and prints p50/p99 time to acquire the lock and the throughput. The exit
status is 0 when every invariant holds, 1 otherwise. On a terminal a live line
shows progress.

The hold interval a worker records runs from the moment Update hands it the
current contents to the moment it returns the new ones; the durable write and
the release that follow are covered by the lost/duplicate check (a second
holder there would read stale contents and lose an update).

Examples:
  exactfs demo
  exactfs demo --workers 4 --updates 50 --chaos=false
  exactfs demo --dir /mnt/shared   # try it on another filesystem`,
		flags: func(fs *flagSet) any {
			o := &demoOptions{}
			fs.IntVar(&o.workers, "workers", 8, "number of worker processes (`N`)")
			fs.IntVar(&o.updates, "updates", 200, "updates per worker (`M`)")
			fs.BoolVar(&o.chaos, "chaos", true, "SIGKILL workers inside their critical section and restart them")
			fs.StringVar(&o.dir, "dir", "", "create the demo's directory under `DIR` (kept afterwards) instead of the system temp dir")
			fs.IntVar(&o.killEvery, "kill-every", 25, "with --chaos, kill one worker every `K` acknowledged updates")
			fs.BoolVar(&o.anywhere, "kill-anywhere", false, "with --chaos, kill 0-3ms after a worker enters, wherever that lands\n(the transform, the durable write, or the release of the lock)")
			fs.BoolVar(&o.keep, "keep", false, "keep the demo's directory afterwards")
			fs.Uint64Var(&o.seed, "seed", 0, "random seed for the chaos loop (0: random)")
			return o
		},
		run: runDemo,
	})
}

// demoEvent is one line from a worker, parsed.
type demoEvent struct {
	kind    string // enter, done, ack, retry
	k       int
	mono    int64
	acquire int64
	dup     bool
}

func parseDemoEvent(line string) (demoEvent, bool) {
	f := strings.Fields(line)
	if len(f) < 2 {
		return demoEvent{}, false
	}
	ev := demoEvent{kind: f[0]}
	var err error
	if ev.k, err = strconv.Atoi(f[1]); err != nil {
		return demoEvent{}, false
	}
	switch {
	case ev.kind == "enter" && len(f) == 4:
		ev.mono, _ = strconv.ParseInt(f[2], 10, 64)
		ev.acquire, _ = strconv.ParseInt(f[3], 10, 64)
	case ev.kind == "done" && len(f) == 3:
		ev.mono, _ = strconv.ParseInt(f[2], 10, 64)
	case ev.kind == "ack" && len(f) == 3:
		ev.dup = f[2] == "dup"
	case ev.kind == "retry", ev.kind == "paused" && len(f) == 2:
	default:
		return demoEvent{}, false
	}
	return ev, true
}

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
	holderKills   []int64 // CLOCK_MONOTONIC of kills that landed while the victim held the lock
	failures      []string
	lastProgress  time.Time
	running       int
	workerExited  chan struct{}
	criticalCount int
}

func runDemo(e *env, opts any, args []string) error {
	o := opts.(*demoOptions)
	if len(args) != 0 {
		return usagef("demo takes no arguments")
	}
	if o.workers < 1 || o.workers > 256 || o.updates < 1 || o.updates > 100000 {
		return usagef("--workers must be 1..256 and --updates 1..100000")
	}
	if o.killEvery <= 0 {
		return usagef("--kill-every must be positive")
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find this program to start workers: %w", err)
	}
	parent := o.dir
	if parent == "" {
		parent = os.TempDir()
	} else {
		o.keep = true
	}
	// The demo's directory lives under a directory reached without symlinks,
	// but for the system's own (macOS puts the temp dir under /var).
	parent = exactfs.SystemPath(parent)
	pd, err := exactfs.OpenDir(parent)
	if err != nil {
		return err
	}
	pd.Close()
	dir, err := os.MkdirTemp(parent, "exactfs-demo-")
	if err != nil {
		return err
	}
	failed := false
	defer func() {
		if !o.keep && !failed {
			os.RemoveAll(dir)
		}
	}()
	seed := o.seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	r := &demoRun{
		o: o, e: e, dir: dir, self: self,
		state:        filepath.Join(dir, "state.json"),
		rng:          rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		expected:     o.workers * o.updates,
		acked:        map[string]int{},
		workerExited: make(chan struct{}, o.workers*4),
	}
	// The workers share one host identity, derived in the demo's own
	// config root so that the demo writes nothing outside its directory.
	host, err := liveness.LoadHostIdentity(filepath.Join(dir, "config"))
	if err != nil {
		host = liveness.FixedHostIdentity(strings.ReplaceAll(exactfs.NewUUID(), "-", ""))
		fmt.Fprintf(e.stderr, "note: no machine id (%v); the demo uses a random host id\n", err)
	}
	r.hostID = host.ID

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	fmt.Fprintf(e.stdout, "exactfs demo: %d workers × %d updates on %s, chaos %s\n",
		o.workers, o.updates, r.state, chaosMode(o))
	r.start = time.Now()
	r.lastProgress = r.start
	err = r.run(ctx)
	elapsed := time.Since(r.start)
	// Keep the files of a run that went wrong, for 'exactfs status'; an
	// interrupted run has nothing to show.
	var interrupted exitStatus
	failed = err != nil && !errors.As(err, &interrupted)
	if e.stderrTTY {
		fmt.Fprint(e.stderr, "\r\033[K")
	}
	if err != nil {
		return err
	}
	ok := r.report(elapsed)
	failed = !ok
	if o.keep || !ok {
		fmt.Fprintf(e.stdout, "\nThe demo's files are kept in %s\n", dir)
	}
	if !ok {
		return exitStatus(1)
	}
	return nil
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

// killLocked SIGKILLs w after delay, recording when.
func (r *demoRun) killLocked(w *demoWorker, delay time.Duration) {
	proc := w.proc
	w.killed = true
	r.kills++
	time.AfterFunc(delay, func() {
		now, _ := holdlog.Now()
		r.mu.Lock()
		w.killedAt = now
		r.mu.Unlock()
		proc.Signal(syscall.SIGKILL)
	})
}

// arm picks a random running worker to be killed inside its next critical
// section.
func (r *demoRun) armLocked() {
	var candidates []*demoWorker
	for _, w := range r.workers {
		if !w.killed && !w.armed && w.next < r.o.updates {
			candidates = append(candidates, w)
		}
	}
	if len(candidates) > 0 {
		w := candidates[r.rng.IntN(len(candidates))]
		w.armed = true
		if !r.o.anywhere {
			io.WriteString(w.stdin, "arm\n")
		}
	}
}

func (r *demoRun) killAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopping = true
	for _, w := range r.workers {
		if w.proc != nil {
			w.killed = true
			w.proc.Signal(syscall.SIGKILL)
		}
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

// report checks the invariants and prints the table. It returns whether
// every invariant holds.
func (r *demoRun) report(elapsed time.Duration) bool {
	w := r.e.stdout
	var problems []string
	data, _, err := exactfs.Capture(r.state)
	var st demoState
	if err == nil {
		st, err = parseDemoState(data)
	}
	if err != nil {
		problems = append(problems, fmt.Sprintf("the state file cannot be read: %v", err))
	}
	seen := map[string]int{}
	for _, id := range st.Applied {
		seen[id]++
	}
	lost, dup := 0, 0
	for id := range r.acked {
		if seen[id] == 0 {
			lost++
		}
	}
	for _, n := range seen {
		if n > 1 {
			dup += n - 1
		}
	}
	hold, herr := holdlog.Check(true, r.holdLogs...)
	overlaps := len(hold.Overlaps)
	if herr != nil && overlaps == 0 {
		problems = append(problems, fmt.Sprintf("hold logs: %v", herr))
	}
	if lost > 0 {
		problems = append(problems, fmt.Sprintf("%d acknowledged updates are missing from the state file", lost))
	}
	if dup > 0 {
		problems = append(problems, fmt.Sprintf("%d updates are in the state file more than once", dup))
	}
	if overlaps > 0 {
		problems = append(problems, fmt.Sprintf("%d pairs of critical sections overlapped", overlaps))
	}
	if len(st.Applied) != r.expected {
		problems = append(problems, fmt.Sprintf("the state file holds %d updates, expected %d", len(st.Applied), r.expected))
	}
	if len(r.acked) != r.expected {
		problems = append(problems, fmt.Sprintf("%d distinct updates were acknowledged, expected %d", len(r.acked), r.expected))
	}
	reclaimWaits, unreclaimed := reclaims(r.holderKills, r.enters)
	maxReclaim := time.Duration(slices.Max(append(reclaimWaits, 0)))
	if unreclaimed > 0 {
		problems = append(problems, fmt.Sprintf("%d locks of killed holders were never taken over", unreclaimed))
	}
	if maxReclaim >= statelock.DefaultWait {
		problems = append(problems, fmt.Sprintf("a killed holder's lock was taken over only after %v: the wait budget ran out instead of a reclaim", maxReclaim))
	}
	lockState := "free (released tombstone)"
	ls, err := statelock.Inspect(r.state, statelock.WithHostIdentity(liveness.FixedHostIdentity(r.hostID)))
	switch {
	case err != nil:
		lockState = "not inspectable"
		problems = append(problems, "the lock cannot be inspected after the run: "+err.Error())
	case ls.State != statelock.StateReleased || ls.Claim.Present:
		lockState = string(ls.State)
		problems = append(problems, fmt.Sprintf("after every worker finished, the lock is %s (claim present: %v)", ls.State, ls.Claim.Present))
	}

	row := func(name string, value any, note string) {
		if note != "" {
			note = "   " + note
		}
		fmt.Fprintf(w, "  %-38s %10v%s\n", name, value, note)
	}
	fmt.Fprintln(w)
	row("expected updates", r.expected, "")
	row("found in the state file", len(st.Applied), "")
	row("lost updates", lost, "(must be 0)")
	row("duplicated updates", dup, "(must be 0)")
	row("overlapping holds", overlaps, fmt.Sprintf("(must be 0; %d critical sections checked by CLOCK_MONOTONIC)", len(hold.Intervals)))
	if r.o.chaos {
		row("workers killed with SIGKILL", r.kills, fmt.Sprintf("(%d while holding the lock; each restarted)", len(r.holderKills)))
		row("locks reclaimed from killed holders", len(reclaimWaits), fmt.Sprintf("(kill to next holder: p50 %v, max %v; budget %v)",
			pctDur(reclaimWaits, 50), pctDur(reclaimWaits, 100), statelock.DefaultWait))
		if r.o.anywhere {
			row("redone updates found already written", r.dups, "(a killed worker's write had landed; not applied twice)")
		}
	}
	row("waits that ran out the budget", r.retries, "")
	row("time to acquire p50 / p99", pctDur(r.acquire, 50).String()+" / "+pctDur(r.acquire, 99).String(), "")
	row("throughput", fmt.Sprintf("%.0f/s", float64(r.expected)/elapsed.Seconds()), fmt.Sprintf("(%d updates in %v)", r.expected, elapsed.Round(time.Millisecond*10)))
	row("lock after the run", lockState, "")
	fmt.Fprintln(w)
	if len(problems) > 0 {
		fmt.Fprintln(w, "FAIL:")
		for _, p := range problems {
			fmt.Fprintln(w, "  - "+p)
		}
		if herr != nil && overlaps > 0 {
			fmt.Fprintln(w, herr)
		}
		return false
	}
	fmt.Fprintln(w, "PASS: every acknowledged update is in the state file exactly once, and no two")
	if r.o.chaos {
		fmt.Fprintln(w, "holders overlapped; every lock left by a killed holder was reclaimed at once.")
	} else {
		fmt.Fprintln(w, "holders overlapped.")
	}
	return true
}

// pctDur returns the p-th percentile of ns values as a rounded duration.
func pctDur(ns []int64, p int) time.Duration {
	if len(ns) == 0 {
		return 0
	}
	s := slices.Clone(ns)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	i = min(max(i-1, 0), len(s)-1)
	d := time.Duration(s[i])
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// reclaims pairs every kill of a holder with the first critical section
// entered after it (by any worker): the moment its lock was taken over.
func reclaims(kills, enters []int64) (waits []int64, unreclaimed int) {
	sorted := slices.Clone(enters)
	slices.Sort(sorted)
	for _, k := range kills {
		i, _ := slices.BinarySearch(sorted, k+1)
		if i == len(sorted) {
			unreclaimed++
			continue
		}
		waits = append(waits, sorted[i]-k)
	}
	return waits, unreclaimed
}

func chaosMode(o *demoOptions) string {
	switch {
	case !o.chaos:
		return "off"
	case o.anywhere:
		return fmt.Sprintf("on (a SIGKILL 0-3ms after a worker enters, every %d updates, then a restart)", o.killEvery)
	}
	return fmt.Sprintf("on (a SIGKILL inside the critical section every %d updates, then a restart)", o.killEvery)
}
