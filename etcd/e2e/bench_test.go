//go:build unix

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/exactfs/exactfs/etcd"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

// The baselines: concurrency.Mutex + Get + Put + Unlock, the plain way to
// do a read-modify-write under an etcd lock (without a fence on the
// write), and the bare Mutex + Put + Unlock loop.
type mutexUpdater struct {
	sess *concurrency.Session
	key  string
}

func (m *mutexUpdater) update(ctx context.Context) error {
	return m.run(ctx, true)
}

// putOnly is the bare "Mutex + Put" loop: Lock, Put, Unlock, no read.
func (m *mutexUpdater) putOnly(ctx context.Context) error {
	return m.run(ctx, false)
}

func (m *mutexUpdater) run(ctx context.Context, read bool) error {
	mu := concurrency.NewMutex(m.sess, m.key+".mutex")
	if err := mu.Lock(ctx); err != nil {
		return err
	}
	cli := m.sess.Client()
	var err error
	n := 0
	if read {
		var r *clientv3.GetResponse
		r, err = cli.Get(ctx, m.key)
		if err == nil && len(r.Kvs) == 1 {
			n, _ = strconv.Atoi(string(r.Kvs[0].Value))
		}
	}
	if err == nil {
		_, err = cli.Put(ctx, m.key, strconv.Itoa(n+1))
	}
	if uerr := mu.Unlock(ctx); err == nil {
		err = uerr
	}
	return err
}

func incrFn(old []byte) ([]byte, error) {
	n := 0
	if len(old) > 0 {
		n, _ = strconv.Atoi(string(old))
	}
	return []byte(strconv.Itoa(n + 1)), nil
}

func benchClient(b testing.TB, eps []string) *clientv3.Client {
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cli.Close() })
	return cli
}

// rate runs f on each of workers goroutines until ops updates in total
// are done, and returns updates per second.
func rate(b testing.TB, workers, ops int, fs []func(context.Context) error) float64 {
	var wg sync.WaitGroup
	var mu sync.Mutex
	left := ops
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(f func(context.Context) error) {
			defer wg.Done()
			for {
				mu.Lock()
				if left == 0 {
					mu.Unlock()
					return
				}
				left--
				mu.Unlock()
				if err := f(context.Background()); err != nil {
					b.Error(err)
					return
				}
			}
		}(fs[w])
	}
	wg.Wait()
	return float64(ops) / time.Since(start).Seconds()
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// BenchmarkVsMutex measures exactfs etcd Update against concurrency.Mutex
// + Get + Put + Unlock on the same three-member cluster, uncontended (one
// client) and contended (four clients, each its own connection and
// session, on one key), in interleaved rounds; it reports the median
// ratios (exactfs / mutex, higher is better) and the rates.
//
//	cd etcd/e2e && go test -run '^$' -bench VsMutex -benchtime 1x .
func BenchmarkVsMutex(b *testing.B) {
	const rounds, ops, workers = 12, 100, 4
	c := startCluster(b)
	eps := c.endpoints()
	var ours, base, bare []func(context.Context) error
	for w := 0; w < workers; w++ {
		cli := benchClient(b, eps)
		l := etcd.NewClient(cli, etcd.WithWait(time.Minute)).Locker("/bench/ours")
		ours = append(ours, func(ctx context.Context) error { return l.Update(ctx, incrFn) })
		sess, err := concurrency.NewSession(cli)
		if err != nil {
			b.Fatal(err)
		}
		m := &mutexUpdater{sess: sess, key: "/bench/mutex"}
		base = append(base, m.update)
		bp := &mutexUpdater{sess: sess, key: "/bench/bare"}
		bare = append(bare, bp.putOnly)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var unc, con, uncP, conP, uncO, uncB, uncX, conO, conB, conX []float64
		for r := 0; r < rounds; r++ {
			o := rate(b, 1, ops, ours)
			m := rate(b, 1, ops, base)
			x := rate(b, 1, ops, bare)
			uncO, uncB, uncX = append(uncO, o), append(uncB, m), append(uncX, x)
			unc, uncP = append(unc, o/m), append(uncP, o/x)
			x = rate(b, workers, ops, bare)
			m = rate(b, workers, ops, base)
			o = rate(b, workers, ops, ours)
			conO, conB, conX = append(conO, o), append(conB, m), append(conX, x)
			con, conP = append(con, o/m), append(conP, o/x)
		}
		b.ReportMetric(median(unc), "uncontended-ratio")
		b.ReportMetric(median(con), "contended-ratio")
		b.ReportMetric(median(uncP), "uncontended-ratio-vs-put")
		b.ReportMetric(median(conP), "contended-ratio-vs-put")
		b.Logf("uncontended, updates/s: exactfs %.0f, Mutex+Get+Put %.0f, Mutex+Put %.0f", median(uncO), median(uncB), median(uncX))
		b.Logf("  ratio exactfs/(Mutex+Get+Put) median %.2f (rounds %s); exactfs/(Mutex+Put) median %.2f (rounds %s)", median(unc), fmtRatios(unc), median(uncP), fmtRatios(uncP))
		b.Logf("contended (%d clients), updates/s: exactfs %.0f, Mutex+Get+Put %.0f, Mutex+Put %.0f", workers, median(conO), median(conB), median(conX))
		b.Logf("  ratio exactfs/(Mutex+Get+Put) median %.2f (rounds %s); exactfs/(Mutex+Put) median %.2f (rounds %s)", median(con), fmtRatios(con), median(conP), fmtRatios(conP))
	}
}

// BenchmarkLeaderKillAvailability kills the leader five times under a
// stream of exactfs Updates and reports how long writes stopped each time.
//
//	cd etcd/e2e && go test -run '^$' -bench LeaderKill -benchtime 1x .
func BenchmarkLeaderKillAvailability(b *testing.B) {
	leaderKill(b)
}

// BenchmarkLeaderKillFastElection is BenchmarkLeaderKillAvailability on a
// cluster with a 50 ms heartbeat and a 500 ms election timeout (etcd's
// defaults: 100 ms, 1 s), to show what the failover time is made of.
func BenchmarkLeaderKillFastElection(b *testing.B) {
	memberTiming = "50,500"
	defer func() { memberTiming = "" }()
	leaderKill(b)
}

func leaderKill(b *testing.B) {
	c := startCluster(b)
	cli := benchClient(b, c.endpoints())
	l := etcd.NewClient(cli, etcd.WithWait(time.Minute)).Locker("/bench/availability")
	update := func(ctx context.Context) error { return l.Update(ctx, incrFn) }
	// The reference: a plain Put, one attempt of at most 1 s, sent again
	// at once after a failure.
	put := func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := cli.Put(ctx, "/bench/put", "x")
		return err
	}
	for i := 0; i < b.N; i++ {
		gaps := availability(b, c, update)
		ref := availability(b, c, put)
		b.Logf("exactfs Update: writes stopped after a leader kill for (5 kills) %v; median %s", gaps, medianDur(gaps))
		b.Logf("plain Put:      writes stopped after a leader kill for (5 kills) %v; median %s", ref, medianDur(ref))
		b.ReportMetric(medianDur(gaps).Seconds(), "s-unavailable-median")
		b.ReportMetric(maxDur(gaps).Seconds(), "s-unavailable-max")
		b.ReportMetric(medianDur(ref).Seconds(), "s-put-unavailable-median")
	}
}

func maxDur(ds []time.Duration) time.Duration {
	m := time.Duration(0)
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

func fmtRatios(xs []float64) string {
	s := ""
	for _, x := range xs {
		s += fmt.Sprintf(" %.2f", x)
	}
	return s[1:]
}

func medianDur(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// availability kills the leader under a stream of Updates and measures,
// for each kill, the longest time between two successive commits from the
// last commit before the kill on: how long writes stopped.
func availability(b testing.TB, c *cluster, update func(context.Context) error) []time.Duration {
	var gaps []time.Duration
	for k := 0; k < 5; k++ {
		ld := c.waitLeader(20 * time.Second)
		var mu sync.Mutex
		var commits []time.Time
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if update(context.Background()) == nil {
					mu.Lock()
					commits = append(commits, time.Now())
					mu.Unlock()
				}
			}
		}()
		time.Sleep(500 * time.Millisecond)
		killed := time.Now()
		c.kill(ld)
		time.Sleep(8 * time.Second)
		close(stop)
		<-done
		gap, prev := time.Duration(0), time.Time{}
		for _, t := range commits {
			if t.Before(killed) {
				prev = t
				continue
			}
			if !prev.IsZero() && t.Sub(prev) > gap {
				gap = t.Sub(prev)
			}
			prev = t
		}
		if len(commits) == 0 || !commits[len(commits)-1].After(killed) {
			b.Errorf("kill %d: writes did not resume within 8 s", k)
		} else {
			gaps = append(gaps, gap.Round(time.Millisecond))
		}
		c.start(ld)
		c.waitLeader(20 * time.Second)
	}
	return gaps
}
