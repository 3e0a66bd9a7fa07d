//go:build unix

package statelock

import (
	"bufio"
	"context"
	"fmt"
	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/statelock/internal/wake"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"os/exec"

	"github.com/exactfs/exactfs/internal/holdlog"
)

func readLines(t *testing.T, p string) []string {
	t.Helper()
	b, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// TestMultiProcessUpdates: 8 processes × 300 Updates of one JSON counter.
// The final value is exact, every update is present once, and no two hold
// intervals (CLOCK_MONOTONIC, logged inside the lock) overlap.
func TestMultiProcessUpdates(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	const procs, each = 8, 300
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var logs []string
	var cmds []*os_exec
	for i := range procs {
		logf := filepath.Join(e.dir, fmt.Sprintf("w%d.log", i))
		logs = append(logs, logf)
		cmd := workerCmd(ctx, "update", "STATELOCK_STATE="+e.state, "STATELOCK_CONFIG="+e.configRoot,
			fmt.Sprintf("STATELOCK_N=%d", each), "STATELOCK_LOG="+logf, fmt.Sprintf("STATELOCK_PREFIX=w%d", i),
			"STATELOCK_COUNTER_ONLY=1")
		cmd.Stderr = os.Stderr
		cmds = append(cmds, &os_exec{cmd})
	}
	start := time.Now()
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
	}
	elapsed := time.Since(start)
	s, err := parseCounter(mustRead(t, e.state))
	if err != nil {
		t.Fatal(err)
	}
	if s.N != procs*each {
		t.Fatalf("counter %d, want %d", s.N, procs*each)
	}
	r, err := holdlog.Check(false, logs...)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Intervals) != procs*each || r.MaxConcurrency != 1 {
		t.Fatalf("hold intervals: %v", r)
	}
	t.Logf("%d updates by %d processes in %s: %v", procs*each, procs, elapsed.Round(time.Millisecond), r)
	assertSteadyState(t, e, true)
}

// os_exec wraps *exec.Cmd to keep the helper list readable.
type os_exec struct{ *exec.Cmd }

// assertSteadyState checks the on-disk shape after a completed cycle:
// F.lock and the sidecar are tombstones byte for byte (key order included),
// mode 0600; no claim directory, no residue.
//
// With modes false the modes are not checked: a TypeScript peer creates
// its files with 0644 (its umask), which is its business.
func assertSteadyState(t *testing.T, e *testEnv, modes bool) {
	t.Helper()
	for _, p := range []string{e.lock, e.sidecar} {
		b := mustRead(t, p)
		r, err := ParseRecord(b)
		if err != nil || !r.Released {
			t.Fatalf("%s is not a tombstone: %s", p, b)
		}
		// The tombstone's exact bytes, followed by nothing but the spaces
		// of an in-place rewrite's padding (SPEC §4.2).
		if want := tombstone(r.Token, e.host.ID).Encode(); !ours(b, want) {
			t.Fatalf("%s:\n got %q\nwant %q (then spaces only)", p, b, want)
		}
		if fi, err := os.Lstat(p); err != nil || (modes && fi.Mode() != 0o600) {
			t.Fatalf("%s: mode %v, %v", p, fi.Mode(), err)
		}
	}
	if fi, err := os.Lstat(e.state); (err != nil && !os.IsNotExist(err)) || (err == nil && modes && fi.Mode() != 0o600) {
		t.Fatalf("state file mode: %v %v", fi, err)
	}
	if _, err := os.Lstat(e.claim); !os.IsNotExist(err) {
		t.Fatalf("claim directory left: %v", err)
	}
	// The private names a cycle may leave are the spare claim directory
	// (claim_linux.go), an empty directory, 0700, and the mailbox.
	spare := exactfs.SpareName(filepath.Base(e.claim))
	ents, _ := os.ReadDir(e.dir)
	for _, en := range ents {
		switch {
		case en.Name() == spare:
			inner, err := os.ReadDir(filepath.Join(e.dir, spare))
			fi, lerr := os.Lstat(filepath.Join(e.dir, spare))
			if err != nil || lerr != nil || len(inner) != 0 || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
				t.Errorf("spare claim directory %s is not an empty 0700 directory: %v %v %v %v", spare, fi, inner, err, lerr)
			}
		case en.Name() == wake.Prefix+filepath.Base(e.lock):
			// The Go cohort's mailbox (handoff.go): 0600, its fixed size.
			fi, err := os.Lstat(filepath.Join(e.dir, en.Name()))
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 || fi.Size() != wake.Size {
				t.Errorf("mailbox %s is not a 0600 file of %d bytes: %v %v", en.Name(), wake.Size, fi, err)
			}
		case strings.HasPrefix(en.Name(), "."):
			t.Errorf("residue left in the directory: %s", en.Name())
		}
	}
}

// TestChaosKill runs 8 updating processes and SIGKILLs holders inside the
// critical section, restarting them. Every acknowledged update is present
// exactly once, the state file always parses, no two live holds overlap
// (a killed hold counts until the SIGKILL was sent), and each killed
// holder's lock is reclaimed promptly, not after the wait budget.
func TestChaosKill(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	const procs, each = 8, 60
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	type kill struct {
		log            string
		sent, reaped   int64
		recoveredAfter time.Duration
	}
	var (
		mu    sync.Mutex
		kills []kill
		logs  []string
		acks  []string
		wg    sync.WaitGroup
		errs  = make(chan error, 100)
	)
	var run func(worker, gen, remaining int)
	run = func(worker, gen, remaining int) {
		defer wg.Done()
		name := fmt.Sprintf("w%dg%d", worker, gen)
		logf, ackf := filepath.Join(e.dir, name+".log"), filepath.Join(e.dir, name+".ack")
		mu.Lock()
		logs, acks = append(logs, logf), append(acks, ackf)
		mu.Unlock()
		cmd := workerCmd(ctx, "update", "STATELOCK_STATE="+e.state, "STATELOCK_CONFIG="+e.configRoot,
			fmt.Sprintf("STATELOCK_N=%d", remaining), "STATELOCK_LOG="+logf, "STATELOCK_PREFIX="+name,
			"STATELOCK_ACK="+ackf, "STATELOCK_CHAOS=40", "STATELOCK_WAIT_MS=20000")
		cmd.Stderr = os.Stderr
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			errs <- err
			return
		}
		sc := bufio.NewScanner(out)
		killed := false
		if sc.Scan() {
			// Every announced long hold is killed: a long hold left alive
			// would only make the others wait.
			mu.Lock()
			kills = append(kills, kill{log: logf})
			mu.Unlock()
			sent, _ := holdlog.Now()
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait() // reap: a zombie is dead to us, but be a good parent
			reaped, _ := holdlog.Now()
			mu.Lock()
			kills[len(kills)-1].sent, kills[len(kills)-1].reaped = sent, reaped
			mu.Unlock()
			// The state file parses after every kill (it may not exist yet
			// when the very first update was the one killed).
			if b, err := os.ReadFile(e.state); err != nil && !os.IsNotExist(err) {
				errs <- err
			} else if _, err := parseCounter(b); err != nil {
				errs <- fmt.Errorf("state does not parse after a kill: %v", err)
			}
			killed = true
		}
		if !killed {
			if err := cmd.Wait(); err != nil {
				errs <- fmt.Errorf("%s: %v", name, err)
			}
			return
		}
		done := len(readLines(t, ackf))
		wg.Add(1)
		go run(worker, gen+1, remaining-done)
	}
	for i := range procs {
		wg.Add(1)
		go run(i, 0, each)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	s, err := parseCounter(mustRead(t, e.state))
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, en := range s.Log {
		count[en.ID]++
	}
	for id, c := range count {
		if c != 1 {
			t.Errorf("update %s present %d times", id, c)
		}
	}
	acked := 0
	for _, a := range acks {
		for _, id := range readLines(t, a) {
			acked++
			if count[id] != 1 {
				t.Errorf("acknowledged update %s present %d times", id, count[id])
			}
		}
	}
	if s.N != len(s.Log) || acked != procs*each || s.N < acked || s.N > acked+len(kills) {
		t.Errorf("n=%d, %d log entries, %d acknowledged (want %d), %d kills", s.N, len(s.Log), acked, procs*each, len(kills))
	}
	r, err := holdlog.Check(true, logs...)
	if err != nil {
		t.Fatal(err)
	}
	if r.MaxConcurrency != 1 {
		t.Fatalf("overlapping holds: %v", r)
	}
	// A killed holder's open interval lasts until the SIGKILL was sent: no
	// other hold may start inside it. The first hold after the reap shows
	// how long the reclaim took.
	sort.Slice(r.Intervals, func(i, j int) bool { return r.Intervals[i].Enter < r.Intervals[j].Enter })
	for _, o := range r.Open {
		var k *kill
		for i := range kills {
			if strings.HasPrefix(o.Where, kills[i].log) {
				k = &kills[i]
			}
		}
		if k == nil {
			t.Errorf("open interval without a kill: %+v", o)
			continue
		}
		for _, iv := range r.Intervals {
			if iv.Enter > o.Enter && iv.Enter < k.sent {
				t.Errorf("hold %+v started while killed holder %+v was alive", iv, o)
			}
			if iv.Enter > k.reaped {
				k.recoveredAfter = time.Duration(iv.Enter - k.reaped)
				break
			}
		}
		if k.recoveredAfter > 2*time.Second {
			t.Errorf("lock of a killed holder reclaimed only after %s", k.recoveredAfter)
		}
	}
	var worst time.Duration
	for _, k := range kills {
		worst = max(worst, k.recoveredAfter)
	}
	t.Logf("%v; %d kills; %d acknowledged, n=%d; slowest reclaim after a kill: %s", r, len(kills), acked, s.N, worst)
	if len(r.Open) == 0 {
		t.Error("no holder was killed inside its critical section: the test proved nothing")
	}
}

// TestWaiterCPU: a waiter that waits 2 s for a held lock spends a few
// milliseconds of CPU, not hundreds: it sleeps (backoff, inotify) instead of
// polling.
func TestWaiterCPU(t *testing.T) {
	e := newEnv(t)
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := workerCmd(ctx, "wait", "STATELOCK_STATE="+e.state, "STATELOCK_CONFIG="+e.configRoot, "STATELOCK_WAIT_MS=2000")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	us, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	cpu := time.Duration(us) * time.Microsecond
	t.Logf("a 2s wait cost %s of CPU", cpu)
	if cpu > 60*time.Millisecond {
		t.Fatalf("a 2s wait cost %s of CPU", cpu)
	}
}
