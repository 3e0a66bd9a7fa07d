//go:build linux && !exactfs_portable

package statelock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/tsseed"
)

// TestAdversaryTSHolderInPidNamespace: a TypeScript reference worker runs
// in its own pid namespace (unshare --pid --fork --mount-proc: a container
// sharing the host's filesystem, hence its machine id and config root, so
// its records name this host) as a pid that no host process has, and holds the lock for 3 s.
// Its record says pid 3, this host, and the start time it read from its own
// /proc (clock ticks since boot: the same number the host would read for
// it). It carries no pid_ns (the reference does not write one). A Go
// contender on the host judges that record by pid in the host's namespace:
// that pid is free there (ESRCH), so the verdict is
// "dead", and the contender steals a live lock. The contender here must time out instead.
//
// Reproduce by hand: unshare --pid --fork --mount-proc sh -c 'sleep 30 &
// sleep 30 & ... node worker.js' with the reference holding, then exactfs
// lock from the host: it enters at once. Proposed fix (liveness, the
// judge): before a "dead" verdict on ESRCH or a start-time mismatch for a
// record without pid_ns, look for a live process in another pid namespace
// that is the recorded owner: /proc/*/status NSpid ending in the recorded
// pid, with the recorded start time (field 22 of stat is the same number in
// every namespace); one found → alive. Only the dead path pays for the scan.
func TestAdversaryTSHolderInPidNamespace(t *testing.T) {
	requirePidNS(t)
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tsLog := filepath.Join(e.dir, "ts.log")
	ts := tsseed.Command(t, e.configRoot, e.state, 1, 3000, tsLog)
	// pid 1: sh; pids 2..free-1: sleeps; pid free: node, where free is a
	// pid no process has on the host.
	free := 0
	for p := 5; p < 400 && free == 0; p++ {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", p)); errors.Is(err, fs.ErrNotExist) {
			free = p
		}
	}
	if free == 0 {
		t.Skip("every pid from 5 to 400 is in use on the host")
	}
	script := fmt.Sprintf(`i=2; while [ $i -lt %d ]; do sleep 30 & i=$((i+1)); done; "$@"`, free)
	args := append([]string{"--pid", "--fork", "--kill-child", "--mount-proc", "sh", "-c", script, "sh", ts.Path}, ts.Args[1:]...)
	cmd := exec.CommandContext(ctx, "unshare", args...)
	cmd.Env, cmd.Dir = ts.Env, ts.Dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if !waitForEnter(t, tsLog, 30*time.Second) {
		t.Fatalf("the namespaced TypeScript holder never entered:\n%s", out.String())
	}
	rec, err := ParseRecord(mustRead(t, e.lock))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the namespaced reference's record: %s", mustRead(t, e.lock))
	if rec.Pid != int64(free) {
		t.Fatalf("node is pid %d in its namespace, want %d: %s", rec.Pid, free, mustRead(t, e.lock))
	}
	wctx, wcancel := context.WithTimeout(ctx, time.Second)
	defer wcancel()
	h, err := Lock(wctx, e.state, e.opts(WithWait(time.Second))...)
	if err == nil {
		h.Unlock()
		t.Fatalf("a Go contender on the host took the lock a live TypeScript holder in another pid namespace (pid %d there) holds", rec.Pid)
	}
	var le *LockError
	if !errors.As(err, &le) {
		t.Fatalf("contender: %v", err)
	}
	t.Logf("contender: %v", err)
}
