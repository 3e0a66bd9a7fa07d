package chaos

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/exactfs/exactfs/internal/holdlog"
	"github.com/exactfs/exactfs/internal/tsseed"
	"github.com/exactfs/exactfs/liveness"
	"github.com/exactfs/exactfs/statelock"
)

// Parameters of the mixed run: harsher than the demo's defaults (kills every
// few tens of milliseconds, at any instant, of both sides). The environment
// variable EXACTFS_CHAOS_SCALE=N (default 1) multiplies the workers of each
// side and the kills by N, for soak runs harsher than CI's.
var (
	chaosScale = envScale()
	goWorkers  = 4 * chaosScale
	tsWorkers  = 3 * chaosScale
	maxKills   = 45 * chaosScale
)

const (
	goUpdates   = 40 // acknowledged updates per Go slot
	tsUpdates   = 40 // completed increments per TypeScript slot
	killEveryMs = 60 // mean pause between kills
	goHoldUs    = 4000
	tsHoldMs    = 2
	// A TypeScript worker is killed only once it has entered a critical
	// section or has run this long (node is loaded; it is waiting for the
	// lock, taking the transition claim again and again, where a kill
	// strands the claim).
	tsStartup = 400 * time.Millisecond
	// How long a kill meant for a TypeScript worker inside its critical
	// section waits for one to enter.
	tsHoldWait = 300 * time.Millisecond
	// How often a finished Go slot takes the lock while TypeScript slots
	// still run (see slot).
	tendEvery = 100 * time.Millisecond
)

// incarnation is one process of a worker slot.
type incarnation struct {
	id      int
	ts      bool
	slot    int
	hist    string // Go: the history file
	holds   string // hold log (its own file: pids are per incarnation)
	pid     int
	killed  bool
	failed  bool  // exited with an error of its own (not killed): its last update's outcome is unknown
	sent    int64 // CLOCK_MONOTONIC when the SIGKILL was sent
	died    int64 // CLOCK_MONOTONIC after it was reaped
	started time.Time
	out     bytes.Buffer
	cmd     *exec.Cmd
}

type run struct {
	t          *testing.T
	dir, state string
	config     string
	mu         sync.Mutex
	incs       []*incarnation
	rng        *rand.Rand // the kills' choices (EXACTFS_CHAOS_SEED)
	running    map[*incarnation]bool
	failures   []string
	kills      [2]int // Go, TypeScript
	tsMisses   int
	tsActive   atomic.Int32 // TypeScript slots still running
}

func now(t *testing.T) int64 {
	ns, err := holdlog.Now()
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// Go and TypeScript reference workers on one state file, SIGKILLed at random
// instants (a TypeScript peer killed inside its transition claim strands it;
// the Go side must heal it), each restarted until its slot has done its
// updates. Then: every acknowledged update is in the file exactly once and a
// killed one at most once; no two holds overlap (a killed hold lasts until
// its SIGKILL); the history of increments, with a killed update's outcome
// unknown, is linearizable (porcupine); the file's own log is the sequence
// 1..n; and the next holder leaves no crash residue.
//
// About 60 s on 2 busy cores.
func TestMixedChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("soak test skipped in -short mode")
	}
	seed := chaosSeed(t)
	r := &run{t: t, dir: t.TempDir(), running: map[*incarnation]bool{}, rng: rand.New(rand.NewPCG(seed, seed))}
	r.state = filepath.Join(r.dir, "state.json")
	r.config = filepath.Join(r.dir, "config")
	if _, err := liveness.LoadHostIdentity(r.config); err != nil {
		t.Fatal(err)
	}
	tsseed.Worker(t) // skips (or fails in CI) without node
	// The harness's own bound (a stalled run fails instead of hanging), six
	// minutes per unit of scale.
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(chaosScale)*6*time.Minute)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for s := range goWorkers {
		wg.Add(1)
		go func() { defer wg.Done(); r.slot(ctx, false, s) }()
	}
	r.tsActive.Store(int32(tsWorkers))
	for s := range tsWorkers {
		wg.Add(1)
		go func() { defer wg.Done(); defer r.tsActive.Add(-1); r.slot(ctx, true, s) }()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	r.chaos(done)
	<-done
	elapsed := time.Since(start)
	for _, f := range r.failures {
		t.Error(f)
	}
	if t.Failed() {
		// What the lock looks like now, for the report.
		if st, err := statelock.Inspect(r.state, statelock.WithConfigRoot(r.config)); err == nil {
			t.Logf("lock: %s %s; claim present %v crashed %v: %s; sidecar %s; residue %+v",
				st.State, st.Detail, st.Claim.Present, st.Claim.Crashed, st.Claim.Why, st.Claim.SidecarVerdict, st.Residue)
		} else {
			t.Logf("inspect: %v", err)
		}
		// The records' own bytes: a torn or empty one says who was killed
		// where (exactfs publishes records whole off Linux; the reference
		// creates them in place).
		for _, n := range []string{".lock", ".lock.transition.owner"} {
			if b, err := os.ReadFile(r.state + n); err == nil {
				fi, _ := os.Stat(r.state + n)
				t.Logf("%s: %d bytes, modified %s: %q", filepath.Base(r.state+n), len(b), fi.ModTime().Format(time.RFC3339Nano), b)
			}
		}
		// A worker that failed (a wait budget run out, say) is a failure of
		// the run, but the history must still be safe: check it, with the
		// failed workers' last updates of unknown outcome.
		final := r.check(now(t))
		t.Logf("the history of the failed run is safe: %d updates in the file, none lost, duplicated or overlapping", final)
		return
	}
	end := now(t)
	final := r.check(end)
	t.Logf("kill turns that found no TypeScript worker past its startup: %d", r.tsMisses)
	t.Logf("%d Go + %d TypeScript slots, %d updates in the file, %d incarnations, kills: %d Go, %d TypeScript, in %s",
		goWorkers, tsWorkers, final, len(r.incs), r.kills[0], r.kills[1], elapsed.Round(time.Millisecond))
}

// slot runs one worker slot: start an incarnation for what is left to do,
// wait for it, and start again after a SIGKILL, until it has done its part.
//
// Go slot 0, once done, tends the lock while TypeScript slots still run:
// one more update every tendEvery. The reference never removes a transition
// claim directory (it reclaims a claim only when it is a file), so a
// TypeScript worker killed inside its claim strands every TypeScript peer
// until a Go process takes the lock and heals it; in a real mixed deployment
// that is the Go process that still uses the file, and in this run, without
// the tender, a kill after the last Go update left the TypeScript workers to
// run out of attempts (SessionStateLockUnavailableError).
func (r *run) slot(ctx context.Context, ts bool, slot int) {
	for {
		r.mu.Lock()
		left, from := r.leftToDo(ts, slot)
		tending := left == 0 && !ts && slot == 0 && r.tsActive.Load() > 0 && ctx.Err() == nil
		if tending {
			r.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(tendEvery):
			}
			r.mu.Lock()
			left = 1
		}
		if left == 0 || ctx.Err() != nil {
			r.mu.Unlock()
			return
		}
		inc := &incarnation{id: len(r.incs), ts: ts, slot: slot}
		kind := "go"
		if ts {
			kind = "ts"
		}
		inc.holds = filepath.Join(r.dir, fmt.Sprintf("holds-%s%d-%d.log", kind, slot, inc.id))
		if ts {
			inc.cmd = tsseed.Command(r.t, r.config, r.state, left, tsHoldMs, inc.holds)
		} else {
			inc.hist = filepath.Join(r.dir, fmt.Sprintf("hist-go%d-%d.log", slot, inc.id))
			inc.cmd = exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
			inc.cmd.Env = append(os.Environ(), roleEnv+"=go",
				"EXACTFS_CHAOS_STATE="+r.state, "EXACTFS_CHAOS_CONFIG="+r.config,
				"EXACTFS_CHAOS_HIST="+inc.hist, "EXACTFS_CHAOS_HOLDS="+inc.holds,
				fmt.Sprintf("EXACTFS_CHAOS_PREFIX=go%d", slot), fmt.Sprintf("EXACTFS_CHAOS_FROM=%d", from),
				fmt.Sprintf("EXACTFS_CHAOS_COUNT=%d", left), fmt.Sprintf("EXACTFS_CHAOS_HOLD_US=%d", goHoldUs))
		}
		inc.cmd.Stdout, inc.cmd.Stderr = &inc.out, &inc.out
		if err := inc.cmd.Start(); err != nil {
			r.failures = append(r.failures, fmt.Sprintf("start %s worker: %v", kind, err))
			r.mu.Unlock()
			return
		}
		inc.pid = inc.cmd.Process.Pid
		inc.started = time.Now()
		r.incs = append(r.incs, inc)
		r.running[inc] = true
		r.mu.Unlock()
		err := inc.cmd.Wait()
		died := now(r.t)
		r.mu.Lock()
		delete(r.running, inc)
		inc.died = died
		killed := inc.killed
		if !killed && err != nil {
			inc.failed = true
			r.failures = append(r.failures, fmt.Sprintf("%s worker %d (pid %d) failed: %v\n%s", kind, slot, inc.pid, err, inc.out.String()))
		}
		r.mu.Unlock()
		if !killed && (err != nil || !tending) {
			return
		}
	}
}

// leftToDo says how many updates the slot still owes and, for Go, the index
// of its next update id (one past every id ever called: a killed update is
// never redone under its id, so each id is one operation).
func (r *run) leftToDo(ts bool, slot int) (left, from int) {
	done := 0
	for _, inc := range r.incs {
		if inc.ts != ts || inc.slot != slot {
			continue
		}
		if ts {
			ivs, open := readHolds(r.t, inc.holds)
			done += len(ivs)
			_ = open
			continue
		}
		calls, oks := readHist(r.t, inc.hist)
		from += len(calls)
		done += len(oks)
	}
	want := goUpdates
	if ts {
		want = tsUpdates
	}
	return max(want-done, 0), from
}

// chaos SIGKILLs a random running worker every few tens of milliseconds
// until maxKills or until every slot is done: a Go or a TypeScript one with
// even odds, and half the time one inside its critical section.
func (r *run) chaos(done chan struct{}) {
	for k := 0; k < maxKills; {
		select {
		case <-done:
			return
		case <-time.After(time.Duration(r.rng.IntN(2*killEveryMs)) * time.Millisecond):
		}
		side := r.rng.IntN(2) == 1 // true: a TypeScript worker, else a Go one
		// Half the time, the one inside its critical section (wherever that
		// is by the time the signal lands: the transform, the durable
		// write, the release). TypeScript workers get the lock rarely
		// while Go ones contend, so for them wait up to tsHoldWait for one
		// to enter.
		wantHolding := r.rng.IntN(2) == 0
		deadline := time.Now().Add(tsHoldWait)
		for {
			r.mu.Lock()
			cands, holding := r.candidates(side)
			waiting := wantHolding && side && len(holding) == 0 && time.Now().Before(deadline)
			var victim *incarnation
			switch {
			case wantHolding && len(holding) > 0:
				victim = holding[r.rng.IntN(len(holding))]
			case !waiting && len(cands) > 0:
				victim = cands[r.rng.IntN(len(cands))]
			}
			if victim != nil {
				victim.killed = true
				victim.sent = now(r.t)
				victim.cmd.Process.Signal(syscall.SIGKILL)
				if victim.ts {
					r.kills[1]++
				} else {
					r.kills[0]++
				}
				k++
			} else if side && !waiting {
				r.tsMisses++
			}
			r.mu.Unlock()
			if !waiting {
				break
			}
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}
}

// candidates lists the running, not yet killed workers of one side that
// may be killed, and those of them inside their critical section (their
// hold log ends with an enter). r.mu is held.
func (r *run) candidates(ts bool) (cands, holding []*incarnation) {
	for inc := range r.running {
		if inc.killed || inc.ts != ts {
			continue
		}
		b, _ := os.ReadFile(inc.holds)
		if inc.ts && time.Since(inc.started) < tsStartup && !bytes.Contains(b, []byte("enter ")) {
			continue
		}
		cands = append(cands, inc)
		if i := bytes.LastIndex(bytes.TrimRight(b, "\n"), []byte("\n")); bytes.HasPrefix(b[i+1:], []byte("enter ")) {
			holding = append(holding, inc)
		}
	}
	return cands, holding
}

type call struct {
	id string
	ns int64
}

type ack struct {
	id string
	n  int
	ns int64
}

func readHist(t *testing.T, p string) (calls []call, oks []ack) {
	b, err := os.ReadFile(p)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "call":
			ns, _ := strconv.ParseInt(f[2], 10, 64)
			calls = append(calls, call{f[1], ns})
		case len(f) == 4 && f[0] == "ok":
			n, _ := strconv.Atoi(f[2])
			ns, _ := strconv.ParseInt(f[3], 10, 64)
			oks = append(oks, ack{f[1], n, ns})
		case len(f) > 0:
			t.Fatalf("%s: malformed line %q", p, sc.Text())
		}
	}
	return calls, oks
}

func readHolds(t *testing.T, p string) (closed, open []holdlog.Interval) {
	if _, err := os.Stat(p); os.IsNotExist(err) {
		return nil, nil
	}
	rep, err := holdlog.Check(true, p)
	if err != nil {
		t.Fatalf("hold log %s: %v", p, err)
	}
	return rep.Intervals, rep.Open
}

// The model of the state file: a counter. An increment whose writer was
// killed (output unknown) may or may not have taken effect; an acknowledged
// one returns the n it wrote; the final read returns n.
type incInput struct{ read bool }

const unknown = -1

var counterModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{0} },
	Step: func(state, input, output interface{}) []interface{} {
		n, out := state.(int), output.(int)
		switch {
		case input.(incInput).read:
			if out == n {
				return []interface{}{n}
			}
			return nil
		case out == unknown:
			return []interface{}{n, n + 1}
		case out == n+1:
			return []interface{}{n + 1}
		}
		return nil
	},
	DescribeOperation: func(input, output interface{}) string {
		if input.(incInput).read {
			return fmt.Sprintf("read -> %d", output)
		}
		if output.(int) == unknown {
			return "inc -> ? (killed)"
		}
		return fmt.Sprintf("inc -> %d", output)
	},
}

// check runs every check on the finished run and returns n.
func (r *run) check(end int64) int {
	t := r.t
	data, err := os.ReadFile(r.state)
	if err != nil {
		t.Fatal(err)
	}
	c, err := parseCounter(data)
	if err != nil {
		t.Fatalf("the state file does not parse: %v", err)
	}
	// The file's own log: one entry per applied update, n = 1..N in order.
	if c.N != len(c.Log) {
		t.Fatalf("n = %d but %d log entries", c.N, len(c.Log))
	}
	for i, e := range c.Log {
		if e.N != i+1 {
			t.Fatalf("log entry %d has n = %d: an update was lost or applied on stale contents", i, e.N)
		}
	}
	byID := map[string]int{} // id -> n
	tsEntries := map[int][]int{}
	for _, e := range c.Log {
		if e.ID != "" {
			if _, dup := byID[e.ID]; dup {
				t.Fatalf("update %s applied twice", e.ID)
			}
			byID[e.ID] = e.N
		} else {
			tsEntries[e.Pid] = append(tsEntries[e.Pid], e.N)
		}
	}
	var ops []porcupine.Operation
	var holds []holdlog.Interval
	var inside [2]int // killed while holding: Go, TypeScript
	for _, inc := range r.incs {
		closed, open := readHolds(t, inc.holds)
		if len(open) > 0 && inc.ts {
			inside[1]++
		} else if len(open) > 0 {
			inside[0]++
		}
		holds = append(holds, closed...)
		for _, iv := range open {
			switch {
			case inc.failed:
				iv.Exit = inc.died // a failed worker's hold counts until it was reaped
			case !inc.killed:
				t.Fatalf("%s: an open hold of a worker that was not killed", inc.holds)
			default:
				iv.Exit = inc.sent // a killed hold counts until the SIGKILL
			}
			holds = append(holds, iv)
		}
		if inc.ts {
			got := tsEntries[inc.pid]
			if len(got) < len(closed) || len(got) > len(closed)+len(open) {
				t.Fatalf("TypeScript pid %d: %d completed and %d killed updates, but %d in the file",
					inc.pid, len(closed), len(open), len(got))
			}
			for k, iv := range closed {
				ops = append(ops, porcupine.Operation{ClientId: inc.id, Input: incInput{}, Call: iv.Enter, Output: got[k], Return: iv.Exit})
			}
			for _, iv := range open {
				ops = append(ops, porcupine.Operation{ClientId: inc.id, Input: incInput{}, Call: iv.Enter, Output: unknown, Return: inc.died})
			}
			continue
		}
		calls, oks := readHist(t, inc.hist)
		acked := map[string]ack{}
		for _, a := range oks {
			acked[a.id] = a
		}
		for _, cl := range calls {
			a, ok := acked[cl.id]
			n, inFile := byID[cl.id]
			switch {
			case ok && !inFile:
				t.Fatalf("acknowledged update %s (n = %d) is not in the state file", cl.id, a.n)
			case ok && n != a.n:
				t.Fatalf("update %s acknowledged n = %d, the file says %d", cl.id, a.n, n)
			case ok:
				ops = append(ops, porcupine.Operation{ClientId: inc.id, Input: incInput{}, Call: cl.ns, Output: a.n, Return: a.ns})
			case !inc.killed && !inc.failed:
				t.Fatalf("update %s of a worker that was not killed was never acknowledged", cl.id)
			default:
				ops = append(ops, porcupine.Operation{ClientId: inc.id, Input: incInput{}, Call: cl.ns, Output: unknown, Return: inc.died})
			}
			delete(byID, cl.id)
		}
	}
	if len(byID) != 0 {
		t.Fatalf("updates in the file that no worker called: %v", byID)
	}
	// Non-overlap of every hold, killed ones included.
	sort.Slice(holds, func(i, j int) bool { return holds[i].Enter < holds[j].Enter })
	for i := 1; i < len(holds); i++ {
		if a, b := holds[i-1], holds[i]; b.Enter < a.Exit {
			t.Fatalf("overlapping holds: pid %d [%d, %d] (%s) and pid %d [%d, %d] (%s)",
				a.PID, a.Enter, a.Exit, a.Where, b.PID, b.Enter, b.Exit, b.Where)
		}
	}
	ops = append(ops, porcupine.Operation{ClientId: len(r.incs), Input: incInput{read: true}, Call: end, Output: c.N, Return: end})
	res, info := porcupine.CheckOperationsVerbose(counterModel.ToModel(), ops, 2*time.Minute)
	switch res {
	case porcupine.Illegal:
		vis := filepath.Join(os.TempDir(), "exactfs-chaos-history.html")
		if f, err := os.Create(vis); err == nil {
			porcupine.Visualize(counterModel.ToModel(), info, f)
			f.Close()
		}
		t.Fatalf("the history of %d operations is not linearizable (visualization: %s)", len(ops), vis)
	case porcupine.Unknown:
		t.Logf("porcupine timed out on %d operations: linearizability not decided", len(ops))
	}
	// The next holder (this process's first hold of the lock) leaves no
	// crash residue of the state file, and the lock steady.
	h, err := statelock.TryLock(r.state, statelock.WithConfigRoot(r.config))
	if err != nil {
		t.Fatalf("the lock after the run: %v", err)
	}
	for _, res := range h.Residue() {
		t.Logf("residue %s: %s", res.Name, res.Note)
		if !res.Removed {
			t.Errorf("residue kept after every writer died: %s (%s)", res.Name, res.Note)
		}
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	st, err := statelock.Inspect(r.state, statelock.WithConfigRoot(r.config))
	if err != nil {
		t.Fatal(err)
	}
	if st.State != statelock.StateReleased || st.Claim.Present {
		t.Fatalf("lock after the run: %s, claim present %v (%s)", st.State, st.Claim.Present, st.Claim.Why)
	}
	for _, res := range st.Residue {
		if res.Kind == "staging" || res.Kind == "temp" || res.Kind == "removing" {
			t.Errorf("residue after the run: %s (%s) %s", res.Name, res.Kind, res.Note)
		}
	}
	t.Logf("%d operations checked by porcupine: %s; %d holds, none overlapping; killed while holding the lock: %d Go, %d TypeScript",
		len(ops), res, len(holds), inside[0], inside[1])
	return c.N
}

// envScale reads EXACTFS_CHAOS_SCALE: a positive integer, 1 when unset.
// chaosSeed is the seed of a run's random choices: EXACTFS_CHAOS_SEED, or
// one drawn at random. It is logged, so that a failing run's choices (not
// the scheduling of its processes, which no seed fixes) can be replayed.
func chaosSeed(t *testing.T) uint64 {
	seed := rand.Uint64()
	if v := os.Getenv("EXACTFS_CHAOS_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("EXACTFS_CHAOS_SEED=%q: want an unsigned integer", v)
		}
		seed = n
	}
	t.Logf("seed %d (EXACTFS_CHAOS_SEED=%d replays the random choices)", seed, seed)
	return seed
}

// envRuns is the number of demo runs: EXACTFS_CHAOS_RUNS, default 3.
func envRuns() int {
	v := os.Getenv("EXACTFS_CHAOS_RUNS")
	if v == "" {
		return 3
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		panic(fmt.Sprintf("EXACTFS_CHAOS_RUNS=%q: want a positive integer", v))
	}
	return n
}

func envScale() int {
	v := os.Getenv("EXACTFS_CHAOS_SCALE")
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		panic(fmt.Sprintf("EXACTFS_CHAOS_SCALE=%q: want a positive integer", v))
	}
	return n
}
