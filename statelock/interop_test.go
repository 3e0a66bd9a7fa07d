//go:build unix

package statelock

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/holdlog"
	"github.com/exactfs/exactfs/internal/tsseed"
	"github.com/exactfs/exactfs/liveness"
)

// Interoperability with the TypeScript reference (shared/interop/ts-seed,
// run unmodified under node): Go and TypeScript processes on one state file
// with one config root, so both compute the same host id.

// waitForEnter polls a hold log until it has an "enter" line.
func waitForEnter(t *testing.T, log string, timeout time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(log); bytes.Contains(b, []byte("enter ")) {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// TestInteropExclusion: two TypeScript and two Go workers increment one
// counter; no increment is lost and no two holds overlap.
func TestInteropExclusion(t *testing.T) {
	if testing.Short() {
		t.Skip("interop test skipped in -short mode")
	}
	const each = 25
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var logs []string
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for i := range 2 {
		logf := filepath.Join(e.dir, fmt.Sprintf("ts%d.log", i))
		logs = append(logs, logf)
		cmd := tsseed.Command(t, e.configRoot, e.state, each, 1, logf)
		cmds = append(cmds, cmd)
	}
	for i := range 2 {
		logf := filepath.Join(e.dir, fmt.Sprintf("go%d.log", i))
		logs = append(logs, logf)
		cmds = append(cmds, workerCmd(ctx, "update", "STATELOCK_STATE="+e.state, "STATELOCK_CONFIG="+e.configRoot,
			fmt.Sprintf("STATELOCK_N=%d", each), "STATELOCK_LOG="+logf, fmt.Sprintf("STATELOCK_PREFIX=go%d", i),
			"STATELOCK_HOLD_MS=1"))
	}
	for _, cmd := range cmds {
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		outs = append(outs, &out)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("worker %d: %v\n%s", i, err, outs[i])
		}
	}
	s, err := parseCounter(mustRead(t, e.state))
	if err != nil {
		t.Fatal(err)
	}
	if s.N != 4*each || len(s.Log) != 4*each {
		t.Fatalf("n=%d with %d entries, want %d", s.N, len(s.Log), 4*each)
	}
	r, err := holdlog.Check(false, logs...)
	if err != nil {
		t.Fatal(err)
	}
	if r.MaxConcurrency != 1 || len(r.Intervals) != 4*each {
		t.Fatalf("hold intervals: %v", r)
	}
	t.Logf("%v; outputs: %s", r, strings.Join([]string{outs[0].String(), outs[1].String()}, ""))
	assertSteadyState(t, e, false)
}

// TestInteropGoReclaimsKilledTS: a TypeScript holder SIGKILLed inside its
// critical section (and reaped) is reclaimed by Go at once.
func TestInteropGoReclaimsKilledTS(t *testing.T) {
	e := newEnv(t)
	logf := filepath.Join(e.dir, "ts.log")
	cmd := tsseed.Command(t, e.configRoot, e.state, 1, 60000, logf)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !waitForEnter(t, logf, 60*time.Second) {
		cmd.Process.Kill()
		t.Fatal("the TypeScript worker never entered its critical section")
	}
	rec, err := ParseRecord(mustRead(t, e.lock))
	if err != nil || rec.Pid != int64(cmd.Process.Pid) || rec.HostID != e.host.ID || rec.Kernel() {
		t.Fatalf("TypeScript owner record: %s (%v)", mustRead(t, e.lock), err)
	}
	// While it lives, Go must not take the lock.
	if _, err := TryLock(e.state, e.opts()...); !errorsIsLocked(err) {
		t.Fatalf("TryLock against a live TypeScript holder: %v", err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	start := time.Now()
	h, err := Lock(context.Background(), e.state, e.opts(WithWait(20*time.Second))...)
	if err != nil {
		t.Fatalf("reclaiming a killed TypeScript holder: %v", err)
	}
	took := time.Since(start)
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	if took > 3*time.Second {
		t.Fatalf("reclaim took %s", took)
	}
	t.Logf("reclaimed the killed TypeScript holder's lock in %s", took)
}

// TestInteropTSReclaimsKilledGo: TypeScript respects a live Go holder (our
// start_time is the linux-proc-v1 value it checks), and reclaims the lock
// once the Go holder is SIGKILLed and reaped.
func TestInteropTSReclaimsKilledGo(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	holder := workerCmd(ctx, "hold", "STATELOCK_STATE="+e.state, "STATELOCK_CONFIG="+e.configRoot)
	startAndWaitLine(t, holder, "H", 30*time.Second)
	defer holder.Process.Kill()
	// Where the kernel gives kernel slots, the record TypeScript judges
	// carries ofd_slot (SPEC §4.8.1), a key it must ignore.
	if ino, _ := liveness.PidfdIno(os.Getpid()); slotOf(ino) != 0 {
		if b := mustRead(t, e.lock); !bytes.Contains(b, []byte(`"ofd_slot":`)) {
			t.Fatalf("the Go holder's record carries no kernel slot: %s", b)
		}
	}

	logf := filepath.Join(e.dir, "ts.log")
	ts := tsseed.Command(t, e.configRoot, e.state, 1, 0, logf)
	var out bytes.Buffer
	ts.Stdout, ts.Stderr = &out, &out
	if err := ts.Start(); err != nil {
		t.Fatal(err)
	}
	if waitForEnter(t, logf, 2*time.Second) {
		t.Fatalf("the TypeScript worker took a live Go holder's lock:\n%s", out.String())
	}
	holder.Process.Signal(syscall.SIGKILL)
	holder.Wait()
	killed := time.Now()
	if !waitForEnter(t, logf, 20*time.Second) {
		t.Fatalf("the TypeScript worker did not reclaim the killed Go holder's lock:\n%s", out.String())
	}
	t.Logf("TypeScript reclaimed the killed Go holder's lock %s after the kill", time.Since(killed).Round(time.Millisecond))
	if err := ts.Wait(); err != nil {
		t.Fatalf("TypeScript worker: %v\n%s", err, out.String())
	}
	s, err := parseCounter(mustRead(t, e.state))
	if err != nil || s.N != 1 {
		t.Fatalf("state after the TypeScript increment: %+v %v", s, err)
	}
	// And Go takes over the TypeScript tombstone.
	h, err := TryLock(e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	h.Unlock()
	assertSteadyState(t, e, false)
}
