package tsseed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/exactfs/exactfs/internal/holdlog"
	"github.com/exactfs/exactfs/internal/testfs"
)

func TestNodeMajor(t *testing.T) {
	for in, want := range map[string]int{"v20.20.2": 20, "v22.1.0": 22, "v18.19.0": 18} {
		if got, ok := nodeMajor(in); !ok || got != want {
			t.Errorf("nodeMajor(%q) = %d, %v", in, got, ok)
		}
	}
	for _, in := range []string{"20.1.0", "vx.1", ""} {
		if _, ok := nodeMajor(in); ok {
			t.Errorf("nodeMajor(%q) accepted", in)
		}
	}
}

// TestTwoWorkers runs two TypeScript workers, 20 increments each, on one
// state file: the reference lock must lose no increment and its hold
// intervals, timed with CLOCK_MONOTONIC by node, must not overlap. It also
// shows that node's clock is holdlog's: every event lies between two
// holdlog.Now readings taken around the run.
func TestTwoWorkers(t *testing.T) {
	const workers, increments = 2, 20
	dir := t.TempDir()
	config := filepath.Join(dir, "config")
	state := filepath.Join(dir, "state.json")

	before, err := holdlog.Now()
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for i := 0; i < workers; i++ {
		log := filepath.Join(dir, fmt.Sprintf("w%d.log", i))
		logs = append(logs, log)
		cmd := Command(t, config, state, increments, 1, log)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		outs = append(outs, &out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("worker %d: %v\n%s", i, err, outs[i])
		}
		t.Logf("worker %d: %s", i, strings.TrimSpace(outs[i].String()))
	}
	after, err := holdlog.Now()
	if err != nil {
		t.Fatal(err)
	}

	var st struct {
		N   int `json:"n"`
		Log []struct {
			PID int `json:"pid"`
			N   int `json:"n"`
		} `json:"log"`
	}
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("state file: %v: %s", err, b)
	}
	if st.N != workers*increments || len(st.Log) != workers*increments {
		t.Fatalf("n = %d with %d log entries, want %d", st.N, len(st.Log), workers*increments)
	}
	for i, e := range st.Log {
		if e.N != i+1 {
			t.Fatalf("log entry %d has n %d: an increment was lost or repeated", i, e.N)
		}
	}

	r, err := holdlog.Check(false, logs...)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckNoOverlap(logs...); err != nil {
		t.Fatal(err)
	}
	t.Logf("hold logs: %v", r)
	if len(r.Intervals) != workers*increments || r.Processes != workers || r.MaxConcurrency != 1 {
		t.Fatalf("hold logs: %v, want %d intervals from %d processes", r, workers*increments, workers)
	}
	for _, iv := range r.Intervals {
		if iv.Enter < before || iv.Exit > after {
			t.Fatalf("interval %+v outside [%d, %d]: node's clock is not holdlog's CLOCK_MONOTONIC", iv, before, after)
		}
	}

	// The lock rests as a released tombstone (pid 1), never deleted.
	var lock map[string]any
	b, err = os.ReadFile(state + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &lock); err != nil || lock["released"] != true || lock["pid"] != float64(1) {
		t.Fatalf("%s.lock is not a released tombstone: %s (%v)", state, b, err)
	}

	// The harness's own checker agrees with holdlog.
	py := testfs.RequireCommand(t, "python3")
	src, err := SourceDir()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, append([]string{filepath.Join(src, "bin", "check-overlap.py")}, logs...)...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "overlaps: 0") {
		t.Fatalf("check-overlap.py: %v\n%s", err, out)
	}
}

// TestCheckersAgreeOnOverlap feeds one overlapping log to holdlog and to the
// harness's check-overlap.py: both must reject it.
func TestCheckersAgreeOnOverlap(t *testing.T) {
	py := testfs.RequireCommand(t, "python3")
	src, err := SourceDir()
	testfs.Require(t, "shared/interop/ts-seed", err == nil, fmt.Sprint(err))
	log := filepath.Join(t.TempDir(), "bad.log")
	if err := os.WriteFile(log, []byte("enter 1 10\nenter 2 15\nexit 1 20\nexit 2 30\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckNoOverlap(log); err == nil {
		t.Error("holdlog accepted overlapping intervals")
	}
	out, err := exec.Command(py, filepath.Join(src, "bin", "check-overlap.py"), log).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "overlaps: 1") {
		t.Errorf("check-overlap.py: %v\n%s", err, out)
	}
}

// TestRunContinues runs one worker on a fresh state file, then a second on
// the same file: the count carries on, and the second reuses the first's
// released tombstone in place (same inode) rather than replacing it.
func TestRunContinues(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "config")
	state := filepath.Join(dir, "state.json")
	if out := Run(t, config, state, 3, 0, ""); !strings.Contains(out, "increments=3") {
		t.Fatalf("summary %q", out)
	}
	before, err := os.Stat(state + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	Run(t, config, state, 2, 0, "")
	after, err := os.Stat(state + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Errorf("%s.lock was replaced, not rewritten in place", state)
	}
	var st struct {
		N int `json:"n"`
	}
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil || st.N != 5 {
		t.Fatalf("state %s (%v), want n 5", b, err)
	}
	if _, err := os.Stat(filepath.Join(config, "machine-identity.secret")); err != nil {
		t.Fatalf("the worker did not use GJC_CONFIG_ROOT=%s: %v", config, err)
	}
}

func TestSharedDirOverride(t *testing.T) {
	src, err := SourceDir()
	testfs.Require(t, "shared/interop/ts-seed", err == nil, fmt.Sprint(err))
	t.Setenv(SharedDirEnv, filepath.Dir(filepath.Dir(src)))
	got, err := SourceDir()
	if err != nil || got != src {
		t.Fatalf("with %s: %q, %v; want %q", SharedDirEnv, got, err, src)
	}
	t.Setenv(SharedDirEnv, t.TempDir())
	if _, err := SourceDir(); err == nil {
		t.Fatalf("an override without interop/ts-seed was accepted")
	}
}

// TestPrepareIsWorker: Prepare, for programs that are not tests, hands out
// the same built harness as Worker, and a missing prerequisite is an error
// that names it rather than a skip.
func TestPrepareIsWorker(t *testing.T) {
	node, worker := Worker(t)
	n2, w2, err := Prepare()
	if err != nil {
		t.Fatalf("Prepare after Worker succeeded: %v", err)
	}
	if n2 != node || w2 != worker {
		t.Fatalf("Prepare = %s %s, Worker = %s %s", n2, w2, node, worker)
	}
	saved := *prepDone
	t.Cleanup(func() { prepMu.Lock(); prepDone = &saved; prepMu.Unlock() })
	prepMu.Lock()
	prepDone = &prepared{what: "node 20+", reason: "node not found in $PATH"}
	prepMu.Unlock()
	if _, _, err := Prepare(); err == nil || !strings.Contains(err.Error(), "node 20+") || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("Prepare with node missing: %v, want an error naming node 20+ and why", err)
	}
}
