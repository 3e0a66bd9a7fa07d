//go:build unix

package statelock

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// BenchmarkGroupCommitRatio measures group commit where it pays: four
// goroutines of one process incrementing one state file. Each round runs,
// interleaved on one filesystem, 4 goroutines x 25 Updates with group
// commit, the same with WithGroupCommit(false), and the same with the
// flock(2) baseline (one flock per goroutine per update, plus the durable
// write); it reports the medians over rounds of the throughput ratios.
// Put the directory on the disk to measure with TMPDIR:
//
//	TMPDIR=/var/tmp go test -run '^$' -bench GroupCommitRatio -benchtime 10x ./statelock/
func BenchmarkGroupCommitRatio(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	const goroutines, per = 4, 25
	inc := func(old []byte) ([]byte, error) {
		s, err := parseCounter(old)
		if err != nil {
			return nil, err
		}
		s.N++
		return []byte(`{"n":` + strconv.Itoa(s.N) + `}`), nil
	}
	run := func(update func() error) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				for range per {
					if err := update(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	}
	on := e.opts(WithWait(time.Minute))
	off := e.opts(WithWait(time.Minute), WithGroupCommit(false))
	flockState := filepath.Join(e.dir, "flock.json")
	var onOff, onFlock, offFlock []float64
	var tOn, tOff, tFlock time.Duration
	for b.Loop() {
		a := run(func() error { return Update(ctx, e.state, inc, on...) })
		c := run(func() error { return Update(ctx, e.state, inc, off...) })
		f := run(func() error { return baselineUpdate(flockState, inc) })
		tOn, tOff, tFlock = tOn+a, tOff+c, tFlock+f
		onOff = append(onOff, float64(c)/float64(a))
		onFlock = append(onFlock, float64(f)/float64(a))
		offFlock = append(offFlock, float64(f)/float64(c))
	}
	med := func(x []float64) float64 { slices.Sort(x); return x[len(x)/2] }
	n := float64(b.N * goroutines * per)
	b.ReportMetric(n/tOn.Seconds(), "on-updates/s")
	b.ReportMetric(n/tOff.Seconds(), "off-updates/s")
	b.ReportMetric(n/tFlock.Seconds(), "flock-updates/s")
	b.ReportMetric(med(onOff), "on/off-x")
	b.ReportMetric(med(onFlock), "on/flock-x")
	b.ReportMetric(med(offFlock), "off/flock-x")
}

// BenchmarkGroupCommitUncontendedRatio is the cost of the group path for
// a lone caller (nothing to share): one goroutine, Updates with group
// commit on and off interleaved; it reports the median of the per-round
// time ratios on/off. On tmpfs, where the lock is most of a cycle:
//
//	TMPDIR=/dev/shm go test -run '^$' -bench GroupCommitUncontended -benchtime 20x ./statelock/
func BenchmarkGroupCommitUncontendedRatio(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	const per = 100
	on := e.opts(WithWait(time.Minute))
	off := e.opts(WithWait(time.Minute), WithGroupCommit(false))
	write := func([]byte) ([]byte, error) { return payload1KiB, nil }
	run := func(opts []Option) time.Duration {
		start := time.Now()
		for range per {
			if err := Update(ctx, e.state, write, opts...); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	var ratios []float64
	for b.Loop() {
		// Alternate which goes first: the second of a pair finds the
		// parked descriptors of the first warm.
		var a, c time.Duration
		if len(ratios)%2 == 0 {
			a, c = run(on), run(off)
		} else {
			c, a = run(off), run(on)
		}
		ratios = append(ratios, float64(a)/float64(c))
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "on/off-time-x")
}
