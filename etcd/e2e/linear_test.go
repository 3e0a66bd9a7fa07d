//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/exactfs/exactfs/etcd"
	"github.com/exactfs/exactfs/liveness"
	"github.com/exactfs/exactfs/locker"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

type lockedWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// opRecord is one Update a worker made, as it reports it on stdout.
type opRecord struct {
	Worker   int    `json:"w"`
	Call     int64  `json:"call"` // wall clock, ns
	Return   int64  `json:"ret"`
	Old      int    `json:"old"`
	New      int    `json:"new"`
	Token    int64  `json:"token"`
	Acquired int64  `json:"acq"`
	Read     int64  `json:"read"`
	Revision int64  `json:"rev"`
	Err      string `json:"err,omitempty"` // a failed Update: nothing written
	Kind     string `json:"kind,omitempty"`
}

func newLockClient(eps []string, opts ...etcd.Option) (*etcd.Client, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	opts = append([]etcd.Option{etcd.WithHostIdentity(liveness.FixedHostIdentity("e2e-host"))}, opts...)
	return etcd.NewClient(cli, opts...), nil
}

// runWorker is the child role: N successful counter increments of KEY,
// each reported as one JSON line. A failed Update wrote nothing; the worker
// reports it and makes a new one (its own, explicit retry).
func runWorker() {
	a := roleArgs()
	id, _ := strconv.Atoi(a[0])
	n, _ := strconv.Atoi(a[1])
	key := a[2]
	eps := strings.Split(a[3], ",")
	c, err := newLockClient(eps, etcd.WithWait(60*time.Second), etcd.WithTTL(5*time.Second), etcd.WithOpTimeout(20*time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	l := c.Locker(key)
	enc := json.NewEncoder(os.Stdout)
	// Each update starts at least pace after the previous one, so that 200
	// updates last at least 15 s and span three leader kills however fast
	// the machine is (here they take longer anyway).
	const pace = 75 * time.Millisecond
	next := time.Now()
	for done := 0; done < n; {
		time.Sleep(time.Until(next))
		next = time.Now().Add(pace)
		rec := opRecord{Worker: id, Call: time.Now().UnixNano()}
		cm, err := l.UpdateCommit(context.Background(), func(old []byte) ([]byte, error) {
			v := 0
			if len(old) > 0 {
				var err error
				if v, err = strconv.Atoi(string(old)); err != nil {
					return nil, fmt.Errorf("state is not a counter: %q", old)
				}
			}
			rec.Old, rec.New = v, v+1
			return []byte(strconv.Itoa(v + 1)), nil
		})
		rec.Return = time.Now().UnixNano()
		rec.Token, rec.Acquired, rec.Read, rec.Revision = cm.Token, cm.Acquired, cm.Read, cm.Revision
		if err != nil {
			rec.Err = err.Error()
			var uo *etcd.UnknownOutcomeError
			switch {
			case errors.As(err, &uo):
				rec.Kind = "unknown"
			case errors.Is(err, locker.ErrLost):
				rec.Kind = "lost"
			default:
				rec.Kind = "error"
			}
		} else {
			done++
		}
		_ = enc.Encode(rec)
	}
}

// counterModel: the state is the counter; an Update read old and wrote
// old+1.
var counterModel = porcupine.Model{
	Init: func() any { return 0 },
	Step: func(state, input, output any) (bool, any) {
		o := output.(opRecord)
		return o.Old == state.(int) && o.New == o.Old+1, o.New
	},
	DescribeOperation: func(input, output any) string {
		o := output.(opRecord)
		return fmt.Sprintf("w%d %d->%d", o.Worker, o.Old, o.New)
	},
}

// TestLeaderKilledEveryFourSeconds: four worker processes make 200
// counter increments each while the leader is SIGKILLed every 4 s (and
// restarted a second later). No increment may be lost or duplicated, no two
// holds may overlap by revision, and the history must be linearizable.
func TestLeaderKilledEveryFourSeconds(t *testing.T) {
	const workers, perWorker = 4, 200
	c := startCluster(t)
	key := "/e2e/counter"
	eps := strings.Join(c.endpoints(), ",")
	var kids []*child
	for w := 0; w < workers; w++ {
		kids = append(kids, startChild(t, roleWork, strconv.Itoa(w), strconv.Itoa(perWorker), key, eps))
	}

	var mu sync.Mutex
	var recs []opRecord
	var wg sync.WaitGroup
	for _, k := range kids {
		wg.Add(1)
		go func(k *child) {
			defer wg.Done()
			for l := range k.lines {
				var r opRecord
				if err := json.Unmarshal([]byte(l), &r); err != nil {
					t.Errorf("worker line %q: %v", l, err)
					continue
				}
				mu.Lock()
				recs = append(recs, r)
				mu.Unlock()
			}
		}(k)
	}
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()

	kills := 0
	ticker := time.NewTicker(4 * time.Second)
	defer ticker.Stop()
	timeout := time.After(6 * time.Minute)
loop:
	for {
		select {
		case <-allDone:
			break loop
		case <-timeout:
			t.Fatalf("workers not done after 6 minutes; %d records", len(recs))
		case <-ticker.C:
			ld := c.leader()
			if ld == nil {
				t.Logf("no leader to kill at %s", time.Now().Format(time.TimeOnly))
				continue
			}
			c.kill(ld)
			kills++
			time.Sleep(time.Second)
			c.start(ld)
		}
	}
	for _, k := range kids {
		<-k.exited
		if k.err != nil {
			t.Errorf("worker exited: %v", k.err)
		}
	}

	var ok []opRecord
	failures := map[string]int{}
	for _, r := range recs {
		if r.Err != "" {
			failures[r.Kind]++
			if r.Kind == "unknown" {
				t.Errorf("worker %d: outcome unknown: %s", r.Worker, r.Err)
			}
			continue
		}
		ok = append(ok, r)
	}
	t.Logf("%d leader kills, %d successful updates, failed (nothing written): %v", kills, len(ok), failures)
	if kills < 3 {
		t.Errorf("only %d leader kills: the run was too short to test failover", kills)
	}
	if len(ok) != workers*perWorker {
		t.Fatalf("%d successful updates, want %d", len(ok), workers*perWorker)
	}

	// 0 lost, 0 duplicated: the final value is the count, and each value
	// 1..N was written exactly once.
	cli := c.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	gr, err := cli.Get(ctx, key)
	if err != nil || len(gr.Kvs) != 1 {
		t.Fatalf("reading the counter: %v %v", gr, err)
	}
	if got := string(gr.Kvs[0].Value); got != strconv.Itoa(workers*perWorker) {
		t.Errorf("final counter %s, want %d: updates were lost or duplicated", got, workers*perWorker)
	}
	seen := map[int]int{}
	for _, r := range ok {
		seen[r.New]++
	}
	lost, dup := 0, 0
	for v := 1; v <= workers*perWorker; v++ {
		switch seen[v] {
		case 0:
			lost++
		case 1:
		default:
			dup++
		}
	}
	if lost != 0 || dup != 0 {
		t.Errorf("values never written: %d, written more than once: %d", lost, dup)
	}

	// 0 overlapping holds: ordered by the revision at which each holder
	// found itself first, each hold starts no earlier than the revision
	// that ended the one before it; and each read is the previous write.
	sort.Slice(ok, func(i, j int) bool { return ok[i].Acquired < ok[j].Acquired })
	overlaps, chain := 0, 0
	for i := 1; i < len(ok); i++ {
		if ok[i].Acquired < ok[i-1].Revision {
			overlaps++
			if overlaps <= 5 {
				t.Errorf("hold %+v began before the previous hold %+v ended", ok[i], ok[i-1])
			}
		}
		if ok[i].Read != ok[i-1].Revision {
			chain++
		}
		if ok[i].Token <= ok[i-1].Token {
			t.Errorf("fencing token did not grow: %d after %d", ok[i].Token, ok[i-1].Token)
		}
	}
	if overlaps != 0 || chain != 0 {
		t.Errorf("%d overlapping holds, %d reads of something other than the previous write", overlaps, chain)
	}

	// Linearizable (porcupine), with wall-clock intervals measured by each
	// worker around its Update.
	var hist []porcupine.Operation
	for _, r := range ok {
		hist = append(hist, porcupine.Operation{ClientId: r.Worker, Call: r.Call, Return: r.Return, Output: r})
	}
	res := porcupine.CheckOperationsTimeout(counterModel, hist, time.Minute)
	if res != porcupine.Ok {
		t.Errorf("history of %d updates is not linearizable: %v", len(hist), res)
	}
}

// TestPausedHolderIsFenced: a holder SIGSTOPped inside its Update, past its
// lease, is fenced: a successor gets the lock within TTL + 1.5 s of the
// stop, and the paused holder's commit, once it resumes, is rejected, every
// time, with nothing written.
func TestPausedHolderIsFenced(t *testing.T) {
	const rounds = 3
	const ttl = 2 * time.Second
	c := startCluster(t)
	key := "/e2e/paused"
	eps := strings.Join(c.endpoints(), ",")
	cli := c.client(t)
	for round := 0; round < rounds; round++ {
		holder := startChild(t, rolePause, key, eps, ttl.String())
		if l := holder.next(t, 20*time.Second); l != "in-fn" {
			t.Fatalf("holder said %q, want in-fn", l)
		}
		stopped := time.Now()
		if err := holder.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		succ := startChild(t, roleSucc, key, eps, fmt.Sprint(round))
		line := succ.next(t, ttl+10*time.Second)
		got, err := strconv.ParseInt(strings.TrimPrefix(line, "got "), 10, 64)
		if err != nil {
			t.Fatalf("successor said %q", line)
		}
		waited := time.Unix(0, got).Sub(stopped)
		t.Logf("round %d: the successor got the lock %s after the holder was stopped (TTL %s)", round, waited.Round(time.Millisecond), ttl)
		if waited > ttl+1500*time.Millisecond {
			t.Errorf("round %d: successor waited %s, more than TTL + 1.5 s", round, waited)
		}
		if l := succ.next(t, 10*time.Second); l != "committed" {
			t.Fatalf("successor: %q", l)
		}
		// Resume the holder past its lease and let its fn return.
		if err := holder.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(holder.stdin)
		res := holder.next(t, 30*time.Second)
		if !strings.HasPrefix(res, "lost: ") {
			t.Errorf("round %d: the paused holder's commit: %q; want it rejected as lost", round, res)
		} else {
			t.Logf("round %d: paused holder: %s", round, res)
		}
		gr, err := cli.Get(context.Background(), key)
		if err != nil || len(gr.Kvs) != 1 || string(gr.Kvs[0].Value) != "successor "+fmt.Sprint(round) {
			t.Fatalf("round %d: state %v %v; want only the successor's write", round, gr, err)
		}
	}
}

// runPauseHolder: take the lock in an Update, say "in-fn", wait for a line
// on stdin (the parent stops and resumes us meanwhile), return, and report
// the commit's outcome.
func runPauseHolder() {
	a := roleArgs()
	key, eps := a[0], strings.Split(a[1], ",")
	ttl, _ := time.ParseDuration(a[2])
	c, err := newLockClient(eps, etcd.WithTTL(ttl), etcd.WithWait(20*time.Second))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	err = c.Locker(key).Update(context.Background(), func(old []byte) ([]byte, error) {
		fmt.Println("in-fn")
		var b [1]byte
		_, _ = os.Stdin.Read(b[:])
		return []byte("paused holder"), nil
	})
	switch {
	case err == nil:
		fmt.Println("committed")
	case errors.Is(err, locker.ErrLost):
		fmt.Println("lost:", err)
	default:
		fmt.Println("error:", err)
	}
}

// runSuccessor: Update the key, saying when fn was called.
func runSuccessor() {
	a := roleArgs()
	key, eps, round := a[0], strings.Split(a[1], ","), a[2]
	c, err := newLockClient(eps, etcd.WithWait(30*time.Second))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	err = c.Locker(key).Update(context.Background(), func(old []byte) ([]byte, error) {
		fmt.Printf("got %d\n", time.Now().UnixNano())
		return []byte("successor " + round), nil
	})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println("committed")
	_ = c.Close()
}
