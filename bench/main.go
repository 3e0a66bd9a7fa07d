//go:build unix

// Command bench is the peer benchmark of exactfs's state-file lock: the
// same multi-process workload (P worker processes × K increments of one
// JSON counter; each increment = lock, read, durable write [temp file,
// fsync, rename, fsync of the directory], unlock) under github.com/gofrs/flock,
// a plain flock(2) on a side file, statelock.Lock with the same hand-written
// write, and statelock.Update (with its default early release, and with the
// lock held through the directory fsync), in one run, interleaved round by round, on
// the filesystem of a given directory (and, as root, on a fresh tmpfs and a
// loop-mounted xfs). It prints one markdown table per filesystem: throughput
// and its ratio to gofrs/flock, acquire percentiles, hand-offs and CPU.
//
//	cd bench && go run . -dir /var/tmp             # the disk of /var/tmp
//	cd bench && sudo go run . -fs dir,tmpfs,xfs,ext4  # plus fresh tmpfs, loop xfs, loop ext4
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
	procsList := flag.String("procs", "1,4,8,16", "comma-separated worker counts P")
	total := flag.Int("n", 800, "increments per run, split over the P workers (K = n/P)")
	rounds := flag.Int("rounds", 3, "rounds; every round runs each kind once per P, in a rotated order")
	kindList := flag.String("kinds", strings.Join(kinds, ","), "comma-separated kinds: "+strings.Join(kinds, ", "))
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
	if *rounds < 1 || *total < 1 {
		fail("-rounds and -n must be at least 1")
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
		b := &bench{self: self, base: base, procs: procs, kinds: ks, total: *total, rounds: *rounds}
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
	results       map[cell][]runResult // one per round
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
				res, err := b.once(kind, p, seq)
				if err != nil {
					return fmt.Errorf("%s, P=%d, round %d: %w", kindTitle[kind], p, r+1, err)
				}
				c := cell{p, kind}
				b.results[c] = append(b.results[c], res)
			}
		}
		fmt.Fprintf(os.Stderr, "bench: %s: round %d of %d done\n", b.base, r+1, b.rounds)
	}
	b.elapsed = time.Since(b.started)
	b.loadAfter = loadavg()
	return nil
}

// once runs P workers of kind on a fresh state file and checks the count.
func (b *bench) once(kind string, p, seq int) (runResult, error) {
	dir := filepath.Join(b.base, fmt.Sprintf("run-%03d-%s-p%d", seq, kind, p))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return runResult{}, err
	}
	defer os.RemoveAll(dir)
	configRoot := filepath.Join(b.base, "config")
	state := filepath.Join(dir, "state.json")
	k := max(1, b.total/p)
	type child struct {
		cmd   *exec.Cmd
		in    io.WriteCloser
		out   *bufio.Reader
		errBf strings.Builder
	}
	var kids []*child
	defer func() {
		for _, c := range kids {
			if c.cmd.ProcessState == nil {
				c.cmd.Process.Kill()
				waitWorker(c.cmd)
			}
		}
	}()
	for id := range p {
		c := &child{cmd: exec.Command(b.self, kind, state, configRoot, strconv.Itoa(k), strconv.Itoa(id+1))}
		c.cmd.Env = append(os.Environ(), workerEnv+"=1")
		c.cmd.Stderr = &c.errBf
		in, err := c.cmd.StdinPipe()
		if err != nil {
			return runResult{}, err
		}
		out, err := c.cmd.StdoutPipe()
		if err != nil {
			return runResult{}, err
		}
		c.in, c.out = in, bufio.NewReader(out)
		if err := startWorker(c.cmd); err != nil {
			return runResult{}, err
		}
		kids = append(kids, c)
	}
	for _, c := range kids {
		if line, err := c.out.ReadString('\n'); err != nil || line != "ready\n" {
			waitWorker(c.cmd)
			return runResult{}, fmt.Errorf("a worker did not start (%q, %v): %s", line, err, c.errBf.String())
		}
	}
	for _, c := range kids {
		c.in.Write([]byte{1})
		c.in.Close()
	}
	var res runResult
	var first, last int64
	var cpu int64
	for i, c := range kids {
		var w workerResult
		derr := json.NewDecoder(c.out).Decode(&w)
		werr := waitWorker(c.cmd)
		if werr != nil || derr != nil {
			return runResult{}, fmt.Errorf("worker %d: %v %v: %s", i+1, werr, derr, strings.TrimSpace(c.errBf.String()))
		}
		if i == 0 || w.StartNs < first {
			first = w.StartNs
		}
		last = max(last, w.EndNs)
		cpu += w.CPUNs
		res.handoffs += w.Handoffs
		res.acquire = append(res.acquire, w.Acquire...)
	}
	n := k * p
	got, err := os.ReadFile(state)
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

// ratio is the median over rounds of kind's value against gofrs/flock's in
// the same round (rounds pair up: both ran in it, next to each other).
func (b *bench) ratio(p int, kind string, val func(runResult) float64) (float64, bool) {
	base, mine := b.results[cell{p, kindGofrs}], b.results[cell{p, kind}]
	if len(base) == 0 || kind == kindGofrs {
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
	for _, p := range b.procs {
		k := max(1, b.total/p)
		if p == 1 {
			row(fmt.Sprintf("P=1 × %d, µs / increment", k), func(kind string) string {
				return withRatio(fmt.Sprintf("%.0f", 1e6/med(p, kind, perSec)), p, kind, perSec, true)
			})
			continue
		}
		row(fmt.Sprintf("P=%d × %d, increments/s", p, k), func(kind string) string {
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
			return fmt.Sprintf("%.0f (%.0f%%)", median(v), 100*median(v)/float64(n))
		})
	}
	for _, p := range b.procs {
		row(fmt.Sprintf("CPU µs / increment, P=%d", p), func(kind string) string {
			return withRatio(fmt.Sprintf("%.0f", med(p, kind, cpu)/1e3), p, kind, cpu, false)
		})
	}
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
