//go:build unix

// Command bench is the peer benchmark of exactfs's state-file lock: the
// same multi-process workload (P worker processes × K increments of one
// JSON counter; each increment = lock, read, durable write [temp file,
// fsync, rename, fsync of the directory], unlock) under github.com/gofrs/flock,
// a plain flock(2) on a side file, statelock.Lock with the same hand-written
// write, and statelock.Update (with its default early release, and with the
// lock held through the directory fsync), in one run, interleaved round by round, on
// the filesystem of a given directory (and, as root, on a fresh tmpfs and a
// loop-mounted xfs). Beside them: SQLite (a BEGIN IMMEDIATE transaction on
// one row, WAL, synchronous=FULL, busy timeout), and the group kinds, several
// goroutines per process (gofrs/flock with one handle per goroutine, and
// statelock.Update). It prints one markdown table per filesystem: throughput
// and its ratio to gofrs/flock, acquire percentiles, hand-offs, CPU, and
// (with strace) system calls per increment; with -mixed, a run of Go workers
// beside TypeScript reference workers on one file, checked for lost updates
// and overlapping critical sections.
//
//	cd bench && go run . -dir /var/tmp             # the disk of /var/tmp
//	cd bench && sudo go run . -fs dir,tmpfs,xfs,ext4  # plus fresh tmpfs, loop xfs, loop ext4
//	cd bench && go run . -kinds group-gofrs,group-update -procs 1,2 -goroutines 4
//	cd bench && go run . -kinds gofrs,update,sqlite -mixed 2+2
//
// It lives in its own module so that the library needs nothing but
// golang.org/x/sys.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	if os.Getenv(workerEnv) != "" {
		if err := runWorker(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench worker:", err)
			os.Exit(1)
		}
		return
	}
	dir := flag.String("dir", "/var/tmp", "run on the filesystem of this directory (a fresh subdirectory is made and removed)")
	fsList := flag.String("fs", "dir", "comma-separated filesystems: dir (that of -dir); tmpfs, xfs, ext4 (need root: mounted fresh, loop devices for xfs and ext4, removed after)")
	// 2 is in the default because two processes are the commonest
	// contention, and the one where a stall of the whole lock showed
	// (160 ms at a time; the sticky re-lock test and the yield, round 10).
	procsList := flag.String("procs", "1,2,4,8,16", "comma-separated worker counts P")
	total := flag.Int("n", 800, "increments per run, split over the P workers (K = n/P)")
	rounds := flag.Int("rounds", 3, "rounds; every round runs each kind once per P, in a rotated order")
	kindList := flag.String("kinds", strings.Join(kinds, ","), "comma-separated kinds: "+strings.Join(kinds, ", "))
	goroutines := flag.Int("goroutines", 4, "goroutines per worker process for the group kinds (each does n/(P·goroutines) increments)")
	straceMode := flag.String("strace", "auto", "count system calls per increment of every kind with strace -f -c (P=1, two run lengths, the difference): on, off, or auto (on where strace is installed)")
	mixedSpec := flag.String("mixed", "", "G+T: also run G Go workers (statelock.Lock + the same write, hold-logged) beside T TypeScript reference workers on one state file, once per round; needs node 20+ and shared/interop/ts-seed")
	flag.Parse()
	procs, err := parseInts(*procsList)
	if err != nil {
		fail("-procs: %v", err)
	}
	ks := strings.Split(*kindList, ",")
	for _, k := range ks {
		if kindTitle[k] == "" {
			fail("-kinds: unknown kind %q (want some of %s)", k, strings.Join(kinds, ","))
		}
	}
	if *rounds < 1 || *total < 1 || *goroutines < 1 {
		fail("-rounds, -n and -goroutines must be at least 1")
	}
	var strace string
	switch *straceMode {
	case "off":
	case "on", "auto":
		if strace, err = exec.LookPath("strace"); err != nil {
			if *straceMode == "on" {
				fail("-strace on: %v", err)
			}
			strace = ""
		}
	default:
		fail("-strace: %q is not on, off or auto", *straceMode)
	}
	var mixed *mixedRun
	if *mixedSpec != "" {
		if mixed, err = parseMixed(*mixedSpec); err != nil {
			fail("-mixed: %v", err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		fail("cannot find this program's executable: %v", err)
	}
	// An interrupt still unmounts and removes what this run made.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var current atomic.Pointer[func()]
	go func() {
		s := <-sigs
		killWorkers()
		if c := current.Swap(nil); c != nil {
			(*c)()
		}
		fail("stopped by %v", s)
	}()
	for _, name := range strings.Split(*fsList, ",") {
		base, cleanupFS, err := filesystem(name, *dir)
		if err != nil {
			fail("%s: %v", name, err)
		}
		current.Store(&cleanupFS)
		cleanup := func() {
			if c := current.Swap(nil); c != nil {
				(*c)()
			}
		}
		b := &bench{self: self, base: base, procs: procs, kinds: ks, total: *total, rounds: *rounds,
			goroutines: *goroutines, strace: strace, mixed: mixed}
		b.fs = describeFS(base)
		err = b.run()
		cleanup()
		if err != nil {
			fail("%s: %v", name, err)
		}
		b.print(os.Stdout)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(1)
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// bench is the runs on one filesystem.
type bench struct {
	self          string
	base          string // a fresh directory on the filesystem measured
	fs            string // describeFS(base)
	procs         []int
	kinds         []string
	total, rounds int
	goroutines    int                  // per worker, for the group kinds
	strace        string               // strace's path, "" to count no system calls
	mixed         *mixedRun            // nil: no mixed run with TypeScript workers
	results       map[cell][]runResult // one per round
	syscalls      map[string]syscallCount
	mixedResults  []mixedResult // one per round
	started       time.Time
	elapsed       time.Duration
	loadBefore    string // /proc/loadavg's 1-minute figure, "" where there is none
	loadAfter     string
}

type cell struct {
	procs int
	kind  string
}

// runResult is one run: P workers of one kind.
type runResult struct {
	perSec   float64 // increments / s, first start to last end
	cpuNs    float64 // CPU per increment, all workers
	handoffs int
	possible int     // increments - 1
	acquire  []int64 // every increment's acquire time
}

// perWorker is the increments each worker process does in a run of kind
// with p workers: n split over the workers, and over each worker's
// goroutines for a group kind (then it is per goroutine).
func (b *bench) perWorker(kind string, p int) int {
	if isGroup(kind) {
		return max(1, b.total/(p*b.goroutines))
	}
	return max(1, b.total/p)
}

// increments is the count a run of kind with p workers must end with.
func (b *bench) increments(kind string, p int) int {
	if isGroup(kind) {
		return b.perWorker(kind, p) * p * b.goroutines
	}
	return b.perWorker(kind, p) * p
}

func (b *bench) run() error {
	b.results = map[cell][]runResult{}
	b.started = time.Now()
	b.loadBefore = loadavg()
	seq := 0
	for r := range b.rounds {
		for pi, p := range b.procs {
			// Rotate the order so that no kind always runs first (on a cold
			// cache) or right after the same neighbour.
			for i := range b.kinds {
				kind := b.kinds[(i+r+pi)%len(b.kinds)]
				seq++
				res, err := b.once(runSpec{kind: kind, p: p, k: b.perWorker(kind, p), seq: seq})
				if err != nil {
					return fmt.Errorf("%s, P=%d, round %d: %w", kindTitle[kind], p, r+1, err)
				}
				c := cell{p, kind}
				b.results[c] = append(b.results[c], res)
			}
		}
		if b.mixed != nil {
			seq++
			m, err := b.runMixed(seq)
			if err != nil {
				return fmt.Errorf("mixed Go+TypeScript run, round %d: %w", r+1, err)
			}
			b.mixedResults = append(b.mixedResults, m)
		}
		fmt.Fprintf(os.Stderr, "bench: %s: round %d of %d done\n", b.base, r+1, b.rounds)
	}
	if b.strace != "" {
		b.syscalls = map[string]syscallCount{}
		for _, kind := range b.kinds {
			seq++
			c, err := b.countSyscalls(kind, seq)
			if err != nil {
				return fmt.Errorf("%s, counting system calls: %w", kindTitle[kind], err)
			}
			b.syscalls[kind] = c
		}
	}
	b.elapsed = time.Since(b.started)
	b.loadAfter = loadavg()
	return nil
}

// runSpec is one run: p workers of kind, k increments each (per
// goroutine for a group kind); with strace set, worker 1 runs under
// strace -f -c writing its summary to strace.
type runSpec struct {
	kind     string
	p, k     int
	seq      int
	strace   string
	straceTo string
}

// once runs P workers of kind on a fresh state file and checks the count.
func (b *bench) once(r runSpec) (runResult, error) {
	kind, p, k := r.kind, r.p, r.k
	dir := filepath.Join(b.base, fmt.Sprintf("run-%03d-%s-p%d", r.seq, kind, p))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return runResult{}, err
	}
	defer os.RemoveAll(dir)
	configRoot := filepath.Join(b.base, "config")
	state := filepath.Join(dir, "state.json")
	if kind == kindSQLite {
		if err := sqliteSetup(sqlitePath(state)); err != nil {
			return runResult{}, err
		}
	}
	g := 1
	if isGroup(kind) {
		g = b.goroutines
	}
	kids := &children{}
	defer kids.kill()
	for id := range p {
		args := []string{b.self, kind, state, configRoot, strconv.Itoa(k), strconv.Itoa(id + 1)}
		if r.strace != "" && id == 0 {
			args = append([]string{r.strace, "-f", "-c", "-o", r.straceTo, "--"}, args...)
		}
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = append(os.Environ(), workerEnv+"=1", goroutinesEnv+"="+strconv.Itoa(g))
		if err := kids.start(cmd); err != nil {
			return runResult{}, err
		}
	}
	ws, err := kids.run()
	if err != nil {
		return runResult{}, err
	}
	var res runResult
	var first, last int64
	var cpu int64
	for i, w := range ws {
		if i == 0 || w.StartNs < first {
			first = w.StartNs
		}
		last = max(last, w.EndNs)
		cpu += w.CPUNs
		res.handoffs += w.Handoffs
		res.acquire = append(res.acquire, w.Acquire...)
	}
	n := k * p * g
	var got []byte
	if kind == kindSQLite {
		got, err = sqliteRead(sqlitePath(state))
	} else {
		got, err = os.ReadFile(state)
	}
	if err != nil {
		return runResult{}, err
	}
	var c counter
	if err := json.Unmarshal(got, &c); err != nil || c.N != n {
		return runResult{}, fmt.Errorf("the counter is %q after %d increments: updates were lost (%v)", got, n, err)
	}
	res.perSec = float64(n) / (float64(last-first) / 1e9)
	res.cpuNs = float64(cpu) / float64(n)
	res.possible = n - 1
	return res, nil
}

// children are the worker processes of one run.
type children struct {
	kids []*child
}

type child struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	errBf strings.Builder
}

// start starts a worker with its stdin and stdout piped.
func (cs *children) start(cmd *exec.Cmd) error {
	c := &child{cmd: cmd}
	c.cmd.Stderr = &c.errBf
	in, err := c.cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	c.in, c.out = in, bufio.NewReader(out)
	if err := startWorker(c.cmd); err != nil {
		return err
	}
	cs.kids = append(cs.kids, c)
	return nil
}

// ready waits until every worker has said "ready".
func (cs *children) ready() error {
	for _, c := range cs.kids {
		if line, err := c.out.ReadString('\n'); err != nil || line != "ready\n" {
			waitWorker(c.cmd)
			return fmt.Errorf("a worker did not start (%q, %v): %s", line, err, c.errBf.String())
		}
	}
	return nil
}

// go lets every worker begin.
func (cs *children) goAhead() {
	for _, c := range cs.kids {
		c.in.Write([]byte{1})
		c.in.Close()
	}
}

// wait collects every worker's result.
func (cs *children) wait() ([]workerResult, error) {
	var ws []workerResult
	for i, c := range cs.kids {
		var w workerResult
		derr := json.NewDecoder(c.out).Decode(&w)
		werr := waitWorker(c.cmd)
		if werr != nil || derr != nil {
			return nil, fmt.Errorf("worker %d: %v %v: %s", i+1, werr, derr, strings.TrimSpace(c.errBf.String()))
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// run starts the workers together and collects their results.
func (cs *children) run() ([]workerResult, error) {
	if err := cs.ready(); err != nil {
		return nil, err
	}
	cs.goAhead()
	return cs.wait()
}

// kill kills and reaps the workers still running.
func (cs *children) kill() {
	for _, c := range cs.kids {
		if c.cmd.ProcessState == nil {
			c.cmd.Process.Kill()
			waitWorker(c.cmd)
		}
	}
}

// The running workers, for an interrupt to kill.
var workers struct {
	sync.Mutex
	m       map[*exec.Cmd]bool
	stopped bool
}

func startWorker(cmd *exec.Cmd) error {
	workers.Lock()
	defer workers.Unlock()
	if workers.stopped {
		return errors.New("interrupted")
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	if workers.m == nil {
		workers.m = map[*exec.Cmd]bool{}
	}
	workers.m[cmd] = true
	return nil
}

// waitWorker waits for a worker started by startWorker and forgets it.
func waitWorker(cmd *exec.Cmd) error {
	err := cmd.Wait()
	workers.Lock()
	delete(workers.m, cmd)
	workers.Unlock()
	return err
}

// killWorkers SIGKILLs every running worker and gives the kernel a moment
// to close their files, so that a mount made for the run can be removed.
func killWorkers() {
	workers.Lock()
	workers.stopped = true
	for cmd := range workers.m {
		cmd.Process.Kill()
	}
	workers.Unlock()
	time.Sleep(300 * time.Millisecond)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func percentile(sorted []int64, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)-1))
	return time.Duration(sorted[i])
}

// baseline is the kind that kind's ratios are to: gofrs/flock, for a
// group kind gofrs/flock with one handle per goroutine, and for a read
// kind gofrs/flock with its shared reads, where those ran.
func (b *bench) baseline(kind string) string {
	if isGroup(kind) && slices.Contains(b.kinds, kindGroupGofrs) {
		return kindGroupGofrs
	}
	if isRW(kind) && slices.Contains(b.kinds, kindRWGofrs) {
		return kindRWGofrs
	}
	return kindGofrs
}

// ratio is the median over rounds of kind's value against its baseline's in
// the same round (rounds pair up: both ran in it, next to each other).
func (b *bench) ratio(p int, kind string, val func(runResult) float64) (float64, bool) {
	bk := b.baseline(kind)
	base, mine := b.results[cell{p, bk}], b.results[cell{p, kind}]
	if len(base) == 0 || kind == bk {
		return 0, false
	}
	var rs []float64
	for i := range min(len(base), len(mine)) {
		rs = append(rs, val(mine[i])/val(base[i]))
	}
	return median(rs), true
}

func (b *bench) print(w io.Writer) {
	fmt.Fprintf(w, "\n### %s\n\n", b.fs)
	fmt.Fprintf(w, "%s, %d cores, %s; %d rounds, interleaved; each figure is the median over rounds, each ratio the median of the "+
		"per-round ratios to gofrs/flock (so it need not equal the ratio of two medians); acquire = asked until the old bytes are read; %s, %s UTC",
		kernel(), runtime.NumCPU(), runtime.Version(), b.rounds, b.elapsed.Round(time.Second), b.started.UTC().Format("2006-01-02 15:04"))
	if b.loadBefore != "" {
		fmt.Fprintf(w, "; load average %s at the start, %s at the end", b.loadBefore, b.loadAfter)
	}
	fmt.Fprint(w, ". ")
	for _, k := range b.kinds {
		if isGroup(k) {
			fmt.Fprintf(w, "Group kinds: each of the P workers runs %d goroutines, each doing n/(P·%d) increments, their ratios are to %s. ",
				b.goroutines, b.goroutines, kindTitle[b.baseline(k)])
			break
		}
	}
	for _, k := range b.kinds {
		if isRW(k) {
			fmt.Fprintf(w, "Read kinds: each increment is followed by a read-only lock cycle of the same worker, their ratios are to %s. ",
				kindTitle[b.baseline(k)])
			break
		}
	}
	fmt.Fprint(w, "\n\n")
	fmt.Fprint(w, "| |")
	for _, k := range b.kinds {
		fmt.Fprintf(w, " %s |", kindTitle[k])
	}
	fmt.Fprint(w, "\n|---|")
	for range b.kinds {
		fmt.Fprint(w, "--:|")
	}
	fmt.Fprintln(w)
	row := func(label string, f func(k string) string) {
		fmt.Fprintf(w, "| %s |", label)
		for _, k := range b.kinds {
			fmt.Fprintf(w, " %s |", f(k))
		}
		fmt.Fprintln(w)
	}
	perSec := func(r runResult) float64 { return r.perSec }
	cpu := func(r runResult) float64 { return r.cpuNs }
	med := func(p int, k string, f func(runResult) float64) float64 {
		var v []float64
		for _, r := range b.results[cell{p, k}] {
			v = append(v, f(r))
		}
		if len(v) == 0 {
			return 0
		}
		return median(v)
	}
	withRatio := func(s string, p int, k string, f func(runResult) float64, inverse bool) string {
		if r, ok := b.ratio(p, k, f); ok {
			if inverse {
				r = 1 / r
			}
			return fmt.Sprintf("%s (%.2f×)", s, r)
		}
		return s
	}
	allGroup := !slices.ContainsFunc(b.kinds, func(k string) bool { return !isGroup(k) })
	for _, p := range b.procs {
		k := max(1, b.total/p)
		label := fmt.Sprintf("P=%d × %d", p, k)
		if allGroup {
			label = fmt.Sprintf("P=%d × %d goroutines × %d", p, b.goroutines, b.perWorker(kindGroupGofrs, p))
		}
		if p == 1 {
			row(label+", µs / increment", func(kind string) string {
				return withRatio(fmt.Sprintf("%.0f", 1e6/med(p, kind, perSec)), p, kind, perSec, true)
			})
			continue
		}
		row(label+", increments/s", func(kind string) string {
			return withRatio(fmt.Sprintf("%.0f", med(p, kind, perSec)), p, kind, perSec, false)
		})
	}
	for _, p := range b.procs {
		if p == 1 {
			continue
		}
		row(fmt.Sprintf("acquire p50 / p99 / max ms, P=%d", p), func(kind string) string {
			var all []int64
			for _, r := range b.results[cell{p, kind}] {
				all = append(all, r.acquire...)
			}
			slices.Sort(all)
			ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 1, 64) }
			return ms(percentile(all, 0.5)) + " / " + ms(percentile(all, 0.99)) + " / " + ms(percentile(all, 1))
		})
	}
	for _, p := range b.procs {
		if p == 1 {
			continue
		}
		n := max(1, b.total/p)*p - 1
		row(fmt.Sprintf("hand-offs to another worker (of %d), P=%d", n, p), func(kind string) string {
			var v []float64
			for _, r := range b.results[cell{p, kind}] {
				v = append(v, float64(r.handoffs))
			}
			// A group kind's worker is a goroutine, and its count differs.
			possible := b.increments(kind, p) - 1
			of := ""
			if possible != n {
				of = fmt.Sprintf(" of %d", possible)
			}
			return fmt.Sprintf("%.0f%s (%.0f%%)", median(v), of, 100*median(v)/float64(possible))
		})
	}
	for _, p := range b.procs {
		row(fmt.Sprintf("CPU µs / increment, P=%d", p), func(kind string) string {
			return withRatio(fmt.Sprintf("%.0f", med(p, kind, cpu)/1e3), p, kind, cpu, false)
		})
	}
	if b.syscalls != nil {
		row("system calls / increment, P=1 (without nanosleep), strace -f -c", func(kind string) string {
			return fmt.Sprintf("%.1f (%.1f)", b.syscalls[kind].perIncrement, b.syscalls[kind].perIncrement-b.syscalls[kind].byName["nanosleep"])
		})
		fmt.Fprintf(w, "\nSystem calls per increment by name (one worker, P=1; the difference of a %d- and a %d-increment run under strace -f -c, "+
			"so start-up is left out; a group kind's figure is per increment of all its goroutines; nanosleep is the Go runtime's sysmon, which ticks with "+
			"wall time, not with work):\n\n", straceLong, straceShort)
		for _, k := range b.kinds {
			fmt.Fprintf(w, "- %s: %.1f: %s\n", kindTitle[k], b.syscalls[k].perIncrement, b.syscalls[k].top(12))
		}
	}
	if len(b.mixedResults) > 0 {
		b.printMixed(w)
	}
}

func (b *bench) printMixed(w io.Writer) {
	m := b.mixed
	k := max(1, b.total/(m.goWorkers+m.tsWorkers))
	fmt.Fprintf(w, "\nMixed: %d Go workers (statelock.Lock + the same durable write) beside %d TypeScript reference workers (ts-seed, Node %s) on one state file, "+
		"%d increments per TypeScript worker, the Go workers running from the TypeScript workers' first enters until the last of them is done; once per round "+
		"(median over %d rounds; \"while both ran\" counts the increments that began and ended between the later side's "+
		"first enter and the earlier side's last exit):\n\n", m.goWorkers, m.tsWorkers, nodeVersion(m.node), k, len(b.mixedResults))
	fmt.Fprintln(w, "| | Go | TypeScript |")
	fmt.Fprintln(w, "|---|--:|--:|")
	side := func(label string, f func(s mixedSide) string) {
		var g, t []string
		for _, r := range b.mixedResults {
			g, t = append(g, f(r.goSide)), append(t, f(r.tsSide))
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", label, strings.Join(g, " / "), strings.Join(t, " / "))
	}
	medSide := func(label string, f func(s mixedSide) float64, format string) {
		var g, t []float64
		for _, r := range b.mixedResults {
			g, t = append(g, f(r.goSide)), append(t, f(r.tsSide))
		}
		fmt.Fprintf(w, "| %s | "+format+" | "+format+" |\n", label, median(g), median(t))
	}
	medSide("increments/s over its own span", func(s mixedSide) float64 { return float64(s.increments) / s.span.Seconds() }, "%.0f")
	medSide("increments/s while both ran", func(s mixedSide) float64 {
		if s.both <= 0 {
			return 0
		}
		return float64(s.inBoth) / s.both.Seconds()
	}, "%.0f")
	side("increments while both ran, per round", func(s mixedSide) string { return strconv.Itoa(s.inBoth) })
	medSide("longest wait, ms", func(s mixedSide) float64 { return float64(s.maxWait) / 1e6 }, "%.1f")
	var counts, overlaps []string
	for _, r := range b.mixedResults {
		counts = append(counts, fmt.Sprintf("%d of %d", r.count, r.want))
		overlaps = append(overlaps, fmt.Sprintf("%d overlaps, max concurrency %d", len(r.overlap.Overlaps), r.overlap.MaxConcurrency))
	}
	fmt.Fprintf(w, "\nFinal counts per round: %s. Hold logs (CLOCK_MONOTONIC, both sides together) per round: %s.\n",
		strings.Join(counts, ", "), strings.Join(overlaps, "; "))
}

func nodeVersion(node string) string {
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}

// loadavg is the 1-minute load average, or "" where /proc has none: on a
// machine shared with other work it says how much to trust the figures.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return ""
}

func kernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return runtime.GOOS
	}
	return runtime.GOOS + " " + strings.TrimSpace(string(b))
}
