//go:build unix

package statelock

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The benchmarks of issue 3. Each exactfs benchmark has a baseline beside
// it, measured in the same run on the same filesystem: flock(2) on a lock
// file plus the plain durable write (temp file, write, fsync, rename,
// fsync of the directory). The Ratio benchmarks interleave the two and
// report their ratio, which is what to quote: this disk's speed drifts by
// 2x over minutes, so separate benchmarks of the two are not comparable.
//
//	go test -run '^$' -bench 'Ratio' -benchtime 400x -count 3 ./statelock/

var payload1KiB = func() []byte {
	var b bytes.Buffer
	b.WriteString(`{"n":0,"pad":"`)
	b.WriteString(strings.Repeat("x", 1024-len(`{"n":0,"pad":""}`)))
	b.WriteString(`"}`)
	return b.Bytes()
}()

func BenchmarkLockUnlock(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	for b.Loop() {
		h, err := Lock(ctx, e.state, e.opts()...)
		if err != nil {
			b.Fatal(err)
		}
		if err := h.Unlock(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBaselineFlockLockUnlock(b *testing.B) {
	dir := b.TempDir()
	for b.Loop() {
		unlock, err := flockPath(filepath.Join(dir, "state.json.flock"))
		if err != nil {
			b.Fatal(err)
		}
		unlock()
	}
}

func BenchmarkUpdate1KiB(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	for b.Loop() {
		if err := Update(ctx, e.state, func([]byte) ([]byte, error) { return payload1KiB, nil }, e.opts()...); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBaselineFlockUpdate1KiB(b *testing.B) {
	dir := b.TempDir()
	state := filepath.Join(dir, "state.json")
	for b.Loop() {
		if err := baselineUpdate(state, func([]byte) ([]byte, error) { return payload1KiB, nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpdateRatio alternates an exactfs Update and the baseline
// update, each on its own state file in one directory, so both see the same
// disk and the same noise; it reports both means and their ratio (the
// issue's target: at most 1.2).
func BenchmarkUpdateRatio(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	base := filepath.Join(filepath.Dir(e.state), "baseline.json")
	put := func([]byte) ([]byte, error) { return payload1KiB, nil }
	var exact, plain time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		if n%2 == 0 {
			if err := Update(ctx, e.state, put, e.opts()...); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if err := baselineUpdate(base, put); err != nil {
				b.Fatal(err)
			}
			exact, plain = exact+t1.Sub(t0), plain+time.Since(t1)
		} else {
			if err := baselineUpdate(base, put); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if err := Update(ctx, e.state, put, e.opts()...); err != nil {
				b.Fatal(err)
			}
			plain, exact = plain+t1.Sub(t0), exact+time.Since(t1)
		}
		n++
	}
	b.ReportMetric(float64(exact.Nanoseconds())/float64(n), "exactfs-ns/op")
	b.ReportMetric(float64(plain.Nanoseconds())/float64(n), "flock-ns/op")
	b.ReportMetric(float64(exact)/float64(plain), "ratio")
}

// BenchmarkContendedUpdate runs b.N counter increments spread over 4 and 8
// processes, with exactfs and with the flock baseline, and reports
// updates/s and the longest single wait for the lock.
func BenchmarkContendedUpdate(b *testing.B) {
	for _, procs := range []int{4, 8} {
		for _, kind := range []string{"statelock", "flock"} {
			b.Run(fmt.Sprintf("%s/procs=%d", kind, procs), func(b *testing.B) {
				ups, worst := contendedRound(b, kind, procs, max(1, b.N/procs))
				b.ReportMetric(ups, "updates/s")
				b.ReportMetric(float64(worst.Milliseconds()), "max-wait-ms")
			})
		}
	}
}

// BenchmarkContendedRatio runs rounds of the contended workload (procs
// processes incrementing one counter), alternating exactfs and the flock
// baseline round by round on the same filesystem, so that both see the same
// disk and the same noise. It reports the median of the per-pair throughput
// ratios (the target: at least 0.8) and the longest single wait
// for the lock on each side. b.N is the number of updates per round.
func BenchmarkContendedRatio(b *testing.B) {
	for _, procs := range []int{2, 4, 8} {
		b.Run(fmt.Sprintf("procs=%d", procs), func(b *testing.B) {
			per := max(1, b.N/procs)
			const rounds = 5
			var ratios []float64
			var worst [2]time.Duration
			for r := range rounds {
				var rate [2]float64
				for i, kind := range []string{"statelock", "flock"} {
					if r%2 == 1 {
						i = 1 - i
						kind = []string{"statelock", "flock"}[i]
					}
					ups, w := contendedRound(b, kind, procs, per)
					rate[i], worst[i] = ups, max(worst[i], w)
				}
				ratios = append(ratios, rate[0]/rate[1])
			}
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "ratio")
			b.ReportMetric(float64(worst[0].Milliseconds()), "exactfs-max-wait-ms")
			b.ReportMetric(float64(worst[1].Milliseconds()), "flock-max-wait-ms")
		})
	}
}

// contendedRound runs procs worker processes doing per updates each of one
// counter, and returns updates/s and the longest wait any of them saw.
func contendedRound(b *testing.B, kind string, procs, per int) (float64, time.Duration) {
	e := newEnv(b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var outs []*bytes.Buffer
	var cmds []*os_exec
	for range procs {
		cmd := workerCmd(ctx, "bench", "STATELOCK_STATE="+e.state, "STATELOCK_CONFIG="+e.configRoot,
			"STATELOCK_N="+strconv.Itoa(per), "STATELOCK_KIND="+kind)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, os.Stderr
		outs = append(outs, &out)
		cmds = append(cmds, &os_exec{cmd})
	}
	start := time.Now()
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	var worst time.Duration
	for _, o := range outs {
		d, _ := time.ParseDuration(strings.TrimSpace(o.String()))
		worst = max(worst, d)
	}
	return float64(per*procs) / elapsed.Seconds(), worst
}

// benchWorker does STATELOCK_N increments with exactfs Update or with the
// flock baseline and prints its longest wait for the lock.
func benchWorker() error {
	state := os.Getenv("STATELOCK_STATE")
	n := envInt("STATELOCK_N", 1)
	kind := os.Getenv("STATELOCK_KIND")
	opts := []Option{WithConfigRoot(os.Getenv("STATELOCK_CONFIG")), WithWait(time.Minute)}
	var worst time.Duration
	for range n {
		asked := time.Now()
		inc := func(old []byte) ([]byte, error) {
			worst = max(worst, time.Since(asked))
			v := 0
			if len(old) > 0 {
				s, err := parseCounter(old)
				if err != nil {
					return nil, err
				}
				v = s.N
			}
			return []byte(`{"n":` + strconv.Itoa(v+1) + `}`), nil
		}
		var err error
		if kind == "flock" {
			err = baselineUpdate(state, inc)
		} else {
			err = Update(context.Background(), state, inc, opts...)
		}
		if err != nil {
			return err
		}
	}
	fmt.Println(worst)
	return nil
}

// baselineUpdate is the floor a lock protocol is measured against: flock
// on a side file, read, write a temp file, fsync, rename, fsync the
// directory, unlock.
func baselineUpdate(state string, fn func([]byte) ([]byte, error)) error {
	unlock, err := flockPath(state + ".flock")
	if err != nil {
		return err
	}
	defer unlock()
	old, err := os.ReadFile(state)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	next, err := fn(old)
	if err != nil {
		return err
	}
	tmp := state + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(next); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	f.Close()
	if err := os.Rename(tmp, state); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(state))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
