//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/exactfs/exactfs/internal/holdlog"
	"github.com/exactfs/exactfs/internal/tsseed"
)

// mixedRun is G Go workers beside T TypeScript reference workers
// (shared/interop/ts-seed, the seed's lock under Node) on one state file.
// Each TypeScript worker does n/(G+T) increments; the Go workers start
// once every TypeScript worker has entered its first critical section and
// keep incrementing until the last TypeScript worker is done, so that the
// two sides run side by side for the whole run whatever their speeds. The
// Go side is statelock.Lock with the same durable write as the other kinds,
// not Update: its hold log must be closed before the release, which Update
// does inside itself.
type mixedRun struct {
	goWorkers, tsWorkers int
	node, workerJS       string
}

func parseMixed(spec string) (*mixedRun, error) {
	gs, ts, ok := strings.Cut(spec, "+")
	g, gerr := strconv.Atoi(gs)
	t, terr := strconv.Atoi(ts)
	if !ok || gerr != nil || terr != nil || g < 1 || t < 1 {
		return nil, fmt.Errorf("%q is not G+T with G Go and T TypeScript workers, both at least 1 (e.g. 2+2)", spec)
	}
	node, worker, err := tsseed.Prepare()
	if err != nil {
		return nil, err
	}
	return &mixedRun{goWorkers: g, tsWorkers: t, node: node, workerJS: worker}, nil
}

// mixedSide is one side's figures in one mixed run.
type mixedSide struct {
	increments int
	span       time.Duration // its first enter to its last exit
	// inBoth is the side's increments that began and ended while both
	// sides were running (from the later first enter to the earlier last
	// exit), and both how long that was.
	inBoth  int
	both    time.Duration
	maxWait time.Duration // longest asked → lock held, over the side's workers
}

type mixedResult struct {
	goSide, tsSide mixedSide
	count, want    int
	overlap        holdlog.Report
}

// tsSummary is the line a TypeScript worker prints when it is done.
var tsSummary = regexp.MustCompile(`^worker pid=(\d+) increments=(\d+) elapsed_ms=([0-9.]+) max_wait_ms=([0-9.]+)$`)

func (b *bench) runMixed(seq int) (mixedResult, error) {
	m := b.mixed
	dir := filepath.Join(b.base, fmt.Sprintf("run-%03d-mixed", seq))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return mixedResult{}, err
	}
	defer os.RemoveAll(dir)
	configRoot := filepath.Join(b.base, "config")
	state := filepath.Join(dir, "state.json")
	k := max(1, b.total/(m.goWorkers+m.tsWorkers))
	stop := filepath.Join(dir, "stop")
	// The Go workers start first and wait for the go-ahead; the TypeScript
	// workers cannot be held at a gate, so the Go workers get it once each
	// TypeScript worker has logged its first enter.
	kids := &children{}
	defer kids.kill()
	var goLogs []string
	for id := range m.goWorkers {
		log := filepath.Join(dir, fmt.Sprintf("go-%d.log", id+1))
		goLogs = append(goLogs, log)
		cmd := exec.Command(b.self, kindLock, state, configRoot, strconv.Itoa(k), strconv.Itoa(id+1))
		cmd.Env = append(os.Environ(), workerEnv+"=1", holdLogEnv+"="+log, untilEnv+"="+stop)
		if err := kids.start(cmd); err != nil {
			return mixedResult{}, err
		}
	}
	if err := kids.ready(); err != nil {
		return mixedResult{}, err
	}
	type tsWorker struct {
		cmd            *exec.Cmd
		log            string
		stdout, stderr bytes.Buffer
	}
	var tss []*tsWorker
	defer func() {
		for _, t := range tss {
			if t.cmd.ProcessState == nil {
				t.cmd.Process.Kill()
				waitWorker(t.cmd)
			}
		}
	}()
	env := []string{"GJC_CONFIG_ROOT=" + configRoot}
	for _, kv := range os.Environ() {
		// GJC_HOST_ID would replace the host id that both sides derive
		// from the config root.
		if !strings.HasPrefix(kv, "GJC_CONFIG_ROOT=") && !strings.HasPrefix(kv, "GJC_HOST_ID=") {
			env = append(env, kv)
		}
	}
	for i := range m.tsWorkers {
		t := &tsWorker{log: filepath.Join(dir, fmt.Sprintf("ts-%d.log", i+1))}
		t.cmd = exec.Command(m.node, m.workerJS, state, strconv.Itoa(k), "--log", t.log)
		t.cmd.Env = env
		t.cmd.Stdout, t.cmd.Stderr = &t.stdout, &t.stderr
		if err := startWorker(t.cmd); err != nil {
			return mixedResult{}, err
		}
		tss = append(tss, t)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; {
		started := 0
		for _, t := range tss {
			if fi, err := os.Stat(t.log); err == nil && fi.Size() > 0 {
				started++
			}
		}
		if started == len(tss) {
			break
		}
		if time.Now().After(deadline) {
			return mixedResult{}, fmt.Errorf("%d of %d TypeScript workers had not entered their first critical section after 2 minutes", len(tss)-started, len(tss))
		}
		time.Sleep(5 * time.Millisecond)
	}
	kids.goAhead()
	var res mixedResult
	var tsLogs []string
	for i, t := range tss {
		if err := waitWorker(t.cmd); err != nil {
			return mixedResult{}, fmt.Errorf("TypeScript worker %d: %v: %s", i+1, err, strings.TrimSpace(t.stderr.String()))
		}
		sm := tsSummary.FindStringSubmatch(strings.TrimSpace(t.stdout.String()))
		if sm == nil {
			return mixedResult{}, fmt.Errorf("TypeScript worker %d printed %q, not its summary line", i+1, t.stdout.String())
		}
		waitMs, _ := strconv.ParseFloat(sm[4], 64)
		res.tsSide.maxWait = max(res.tsSide.maxWait, time.Duration(waitMs*1e6))
		tsLogs = append(tsLogs, t.log)
	}
	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		return mixedResult{}, err
	}
	ws, err := kids.wait()
	if err != nil {
		return mixedResult{}, err
	}
	goN := 0
	for _, w := range ws {
		goN += len(w.Acquire)
		for _, a := range w.Acquire {
			res.goSide.maxWait = max(res.goSide.maxWait, time.Duration(a))
		}
	}
	// Exclusion across both sides: no two critical sections overlap by
	// CLOCK_MONOTONIC, and every enter has its exit.
	res.overlap, err = holdlog.Check(false, append(append([]string{}, goLogs...), tsLogs...)...)
	if err != nil {
		return mixedResult{}, fmt.Errorf("the hold logs: %w", err)
	}
	goIv, err := holdlog.Check(false, goLogs...)
	if err != nil {
		return mixedResult{}, err
	}
	tsIv, err := holdlog.Check(false, tsLogs...)
	if err != nil {
		return mixedResult{}, err
	}
	res.want = goN + k*m.tsWorkers
	got, err := os.ReadFile(state)
	if err != nil {
		return mixedResult{}, err
	}
	var c counter
	if err := json.Unmarshal(got, &c); err != nil {
		return mixedResult{}, fmt.Errorf("the state file does not parse after the mixed run (%.200q): %v", got, err)
	}
	res.count = c.N
	if c.N != res.want || len(goIv.Intervals) != goN || len(tsIv.Intervals) != k*m.tsWorkers {
		return mixedResult{}, fmt.Errorf("the counter is %d after %d Go and %d TypeScript increments (%d and %d critical sections logged): updates were lost",
			c.N, goN, k*m.tsWorkers, len(goIv.Intervals), len(tsIv.Intervals))
	}
	if goN == 0 {
		return mixedResult{}, fmt.Errorf("the Go workers did no increment while %d TypeScript workers did %d", m.tsWorkers, k*m.tsWorkers)
	}
	gi, ti := goIv.Intervals, tsIv.Intervals
	from := max(gi[0].Enter, ti[0].Enter)
	to := min(lastExit(gi), lastExit(ti))
	for _, s := range []struct {
		side *mixedSide
		iv   []holdlog.Interval
	}{{&res.goSide, gi}, {&res.tsSide, ti}} {
		s.side.increments = len(s.iv)
		s.side.span = time.Duration(lastExit(s.iv) - s.iv[0].Enter)
		if to > from {
			s.side.both = time.Duration(to - from)
			for _, iv := range s.iv {
				if iv.Enter >= from && iv.Exit <= to {
					s.side.inBoth++
				}
			}
		}
	}
	return res, nil
}

func lastExit(iv []holdlog.Interval) int64 {
	var last int64
	for _, i := range iv {
		last = max(last, i.Exit)
	}
	return last
}
