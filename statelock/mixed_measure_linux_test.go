package statelock

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/holdlog"
	"github.com/exactfs/exactfs/internal/tsseed"
)

// TestMeasureMixedThroughput is a measured run, not a check (it asserts
// only exclusion): two Go updaters and two TypeScript reference workers
// increment one counter for EXACTFS_MIXED_SECONDS seconds (each holding
// the lock EXACTFS_MIXED_HOLD_MS more per update, default 0), then are
// SIGKILLed, and it logs how many updates each side completed (closed hold
// intervals) and what the waiters' processes cost. Skipped unless the
// variable is set:
//
//	EXACTFS_MIXED_SECONDS=30 go test -count=1 -run TestMeasureMixedThroughput -v ./statelock/
func TestMeasureMixedThroughput(t *testing.T) {
	secs, holdMs := envInt("EXACTFS_MIXED_SECONDS", 0), envInt("EXACTFS_MIXED_HOLD_MS", 0)
	if secs <= 0 {
		t.Skip("a measured run: set EXACTFS_MIXED_SECONDS to run it")
	}
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second+5*time.Minute)
	defer cancel()
	type worker struct {
		side string
		log  string
		cmd  *exec.Cmd
	}
	var ws []worker
	for i := range 2 {
		logf := filepath.Join(e.dir, fmt.Sprintf("ts%d.log", i))
		ws = append(ws, worker{"typescript", logf, tsseed.Command(t, e.configRoot, e.state, 1_000_000, holdMs, logf)})
	}
	for i := range 2 {
		logf := filepath.Join(e.dir, fmt.Sprintf("go%d.log", i))
		ws = append(ws, worker{"go", logf, workerCmd(ctx, "update", "STATELOCK_STATE="+e.state, "STATELOCK_CONFIG="+e.configRoot,
			"STATELOCK_N=1000000", "STATELOCK_LOG="+logf, fmt.Sprintf("STATELOCK_HOLD_MS=%d", holdMs), fmt.Sprintf("STATELOCK_PREFIX=go%d", i), "STATELOCK_WAIT_MS=600000")})
	}
	for _, w := range ws {
		w.cmd.Stdout, w.cmd.Stderr = os.Stderr, os.Stderr
		if err := w.cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Duration(secs) * time.Second)
	for _, w := range ws {
		w.cmd.Process.Signal(syscall.SIGKILL)
	}
	count := map[string]int{}
	cpu := map[string]time.Duration{}
	for _, w := range ws {
		w.cmd.Wait()
		if st := w.cmd.ProcessState; st != nil {
			cpu[w.side] += st.UserTime() + st.SystemTime()
		}
		r, err := holdlog.Check(true, w.log)
		if err != nil {
			t.Fatal(err)
		}
		count[w.side] += len(r.Intervals)
	}
	var logs []string
	for _, w := range ws {
		logs = append(logs, w.log)
	}
	r, err := holdlog.Check(true, logs...)
	if err != nil {
		t.Fatalf("holds overlap: %v", err)
	}
	s, _ := parseCounter(mustRead(t, e.state))
	t.Logf("in %ds, holding %d ms: Go %d updates (2 processes, %s CPU), TypeScript %d updates (2 processes, %s CPU); n=%d; %v",
		secs, holdMs, count["go"], cpu["go"].Round(time.Millisecond), count["typescript"], cpu["typescript"].Round(time.Millisecond), s.N, r)
}
