//go:build !exactfs_portable

package statelock

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/holdlog"
	"github.com/exactfs/exactfs/internal/testfs"
	"github.com/exactfs/exactfs/internal/tsseed"
	"github.com/exactfs/exactfs/liveness"
)

// A Go holder in a pid namespace other than the host's initial one (a
// toolbox-style container sharing the directory, machine id and config
// root) records the pid its own namespace gives it. The TypeScript
// reference outside looks that pid up in its namespace; before
// lockOwner moved the host id to pidns_host_id it found another process
// there (the worker below is pid 1 of its namespace, so the reference saw
// the host's init with another start time), called the pid reused and
// took the lock: two holders.

// nsWorkerCmd is workerCmd run as pid 1 of a new pid namespace, sharing
// everything else (the directory, /proc, the machine id, the config root).
// --kill-child: the worker dies with unshare, whatever kills unshare.
func nsWorkerCmd(ctx context.Context, mode string, env ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "unshare", "--pid", "--fork", "--kill-child", os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{workerEnv + "=" + mode}, env...)...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// childPid is the pid (in our namespace) of unshare's only child.
func childPid(t *testing.T, unsharePid int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", unsharePid, unsharePid))
		if f := strings.Fields(string(b)); len(f) == 1 {
			if pid, err := strconv.Atoi(f[0]); err == nil {
				return pid
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("unshare (pid %d) has no child", unsharePid)
	return 0
}

func requirePidNS(t *testing.T) {
	t.Helper()
	testfs.RequireRoot(t)
	testfs.RequireUnshare(t)
	self, err := liveness.Self()
	if err != nil {
		t.Fatal(err)
	}
	// The test's contrast needs its own process outside: the TypeScript
	// worker and the Go peer run where the test runs.
	testfs.Require(t, "the initial pid namespace", self.InitialPidNS(),
		fmt.Sprintf("the test itself runs in pid namespace %d, not the host's initial one", self.PidNS))
}

// TestPidNSHolderAgainstTS: a Go holder in its own pid namespace holds the
// lock for 2 s inside an Update while the TypeScript reference worker
// outside tries to take it. The reference must wait for the release (no
// overlap of the CLOCK_MONOTONIC hold intervals, both increments counted).
// Fails before lockOwner: the reference enters at once.
func TestPidNSHolderAgainstTS(t *testing.T) {
	requirePidNS(t)
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	goLog := filepath.Join(e.dir, "go.log")
	holder := nsWorkerCmd(ctx, "update", "STATELOCK_STATE="+e.state, "STATELOCK_CONFIG="+e.configRoot,
		"STATELOCK_N=1", "STATELOCK_HOLD_MS=2000", "STATELOCK_LOG="+goLog, "STATELOCK_PREFIX=ns")
	var hout bytes.Buffer
	holder.Stdout, holder.Stderr = &hout, &hout
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Process.Kill()
	if !waitForEnter(t, goLog, 30*time.Second) {
		t.Fatalf("the namespaced Go holder never entered:\n%s", hout.String())
	}
	rec, err := ParseRecord(mustRead(t, e.lock))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Pid != 1 || rec.HostID != "" || rec.PidNSHostID != e.host.ID || rec.PidNS == 0 {
		t.Fatalf("the namespaced holder's record: %s", mustRead(t, e.lock))
	}
	// Inspect (exactfs status) names the host the record is judged by:
	// the holder is on this host, not "an unnamed host (an old writer)".
	if st, err := Inspect(e.state, e.opts()...); err != nil || st.Holder == nil ||
		st.Holder.HostID != e.host.ID || !st.Holder.ThisHost {
		t.Errorf("Inspect of the namespaced holder: %+v (holder %+v), %v; want it on this host", st, st.Holder, err)
	}

	tsLog := filepath.Join(e.dir, "ts.log")
	ts := tsseed.Command(t, e.configRoot, e.state, 1, 0, tsLog)
	var tout bytes.Buffer
	ts.Stdout, ts.Stderr = &tout, &tout
	if err := ts.Start(); err != nil {
		t.Fatal(err)
	}
	if err := holder.Wait(); err != nil {
		t.Fatalf("namespaced Go holder: %v\n%s", err, hout.String())
	}
	if err := ts.Wait(); err != nil {
		t.Fatalf("TypeScript worker: %v\n%s", err, tout.String())
	}
	r, err := holdlog.Check(false, goLog, tsLog)
	if err != nil {
		t.Fatalf("%v\nTypeScript: %s", err, tout.String())
	}
	if r.MaxConcurrency != 1 || len(r.Intervals) != 2 {
		t.Fatalf("hold intervals: %v", r)
	}
	s, err := parseCounter(mustRead(t, e.state))
	if err != nil || s.N != 2 {
		t.Fatalf("state: %+v %v", s, err)
	}
	t.Logf("%v", r)
	assertSteadyState(t, e, false)
}

// TestPidNSHolderKilled: a namespaced Go holder SIGKILLed while the
// TypeScript reference waits is never reclaimed by the reference (it reads a
// record without owner_host_id as alive), and a Go peer outside reclaims it
// at once by the kernel lock; the reference then gets its turn.
func TestPidNSHolderKilled(t *testing.T) {
	requirePidNS(t)
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	holder := nsWorkerCmd(ctx, "hold", "STATELOCK_STATE="+e.state, "STATELOCK_CONFIG="+e.configRoot)
	startAndWaitLine(t, holder, "H", 30*time.Second)
	defer holder.Process.Kill()
	inner := childPid(t, holder.Process.Pid)

	l, err := openLocker(e.state, e.opts(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	who := func() (string, verdict) {
		f, s, err := l.openCapture(l.lockName)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		v := l.judgeRecord(s, f)
		return l.describeWho(s, v), v
	}
	if d, v := who(); v.Verdict != liveness.Alive || !strings.Contains(d, "pid 1 in another pid namespace on this host") {
		t.Fatalf("the live namespaced holder is described as %q", d)
	}

	tsLog := filepath.Join(e.dir, "ts.log")
	ts := tsseed.Command(t, e.configRoot, e.state, 1, 0, tsLog)
	var tout bytes.Buffer
	ts.Stdout, ts.Stderr = &tout, &tout
	if err := ts.Start(); err != nil {
		t.Fatal(err)
	}
	defer ts.Process.Kill()
	if waitForEnter(t, tsLog, 2*time.Second) {
		t.Fatalf("the TypeScript worker took the live namespaced Go holder's lock:\n%s", tout.String())
	}
	if err := syscall.Kill(inner, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	holder.Wait() // unshare reaps its child, then exits
	if d, v := who(); !v.dead() {
		t.Fatalf("the killed namespaced holder is judged %q", d)
	}
	start := time.Now()
	h, err := Lock(context.Background(), e.state, e.opts(WithWait(20*time.Second))...)
	if err != nil {
		t.Fatalf("a Go peer reclaiming the killed namespaced holder: %v", err)
	}
	took := time.Since(start)
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	t.Logf("a Go peer reclaimed the killed namespaced holder's lock in %s", took.Round(time.Microsecond))
	if !waitForEnter(t, tsLog, 30*time.Second) {
		t.Fatalf("the TypeScript worker never got the lock after the Go peer released it:\n%s", tout.String())
	}
	if err := ts.Wait(); err != nil {
		t.Fatalf("TypeScript worker: %v\n%s", err, tout.String())
	}
	assertSteadyState(t, e, false)
}

// TestLockOwnerHidesHostInPidNS: the record a holder outside the initial pid
// namespace writes in F.lock names its host in pidns_host_id only; sidecars
// and tombstones keep owner_host_id; a record without pid_ns does not get
// the hidden host counted by the pid rules.
func TestLockOwnerHidesHostInPidNS(t *testing.T) {
	e := newEnv(t)
	l, err := openLocker(e.state, e.opts(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	l.self.PidNS = 0xF0000123 // a namespace the kernel allocates, not the initial one
	r := l.lockOwner()
	if r.HostID != "" || r.PidNSHostID != e.host.ID {
		t.Fatalf("namespaced lock owner: %s", r.Encode())
	}
	if side := l.newOwner(); side.HostID != e.host.ID || side.PidNSHostID != "" {
		t.Fatalf("namespaced sidecar owner: %s", side.Encode())
	}
	if ts := l.tombstone(); ts.HostID != e.host.ID {
		t.Fatalf("tombstone: %s", ts.Encode())
	}
	back, err := ParseRecord(r.Encode())
	if err != nil || back.HostID != "" || back.PidNSHostID != e.host.ID || back.Host() != e.host.ID {
		t.Fatalf("round trip of %s: %+v %v", r.Encode(), back, err)
	}
	if !bytes.Contains(r.Encode(), []byte(`"pidns_host_id":"`+e.host.ID+`"`)) || bytes.Contains(r.Encode(), []byte("owner_host_id")) {
		t.Fatalf("encoded: %s", r.Encode())
	}
	plain := *back
	plain.PidNS = 0
	if judgedHost(&plain) != "" || judgedHost(back) != e.host.ID {
		t.Fatal("judgedHost counts pidns_host_id without pid_ns")
	}
	l.self.PidNS = 0xEFFFFFFC
	if r := l.lockOwner(); r.HostID != e.host.ID || r.PidNSHostID != "" {
		t.Fatalf("lock owner in the initial namespace: %s", r.Encode())
	}
}
