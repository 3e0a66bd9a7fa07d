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
)

// oldBuildCommit is the last exactfs before kernel slots (SPEC §4.8.1):
// its holders lock the whole holder range [0, queueBase) and its judges
// ask about that whole range.
const oldBuildCommit = "f315da3"

// oldWorkerBinary builds this package's test binary (the worker modes of
// worker_test.go) as it was at oldBuildCommit, from the repository this
// checkout belongs to, or uses STATELOCK_OLD_WORKER when set. It skips,
// saying why, where there is no git or the commit is not in the history (a
// shallow clone).
func oldWorkerBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("STATELOCK_OLD_WORKER"); p != "" {
		return p
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git to build the older exactfs from:", err)
	}
	if out, err := exec.Command(git, "cat-file", "-e", oldBuildCommit+"^{commit}").CombinedOutput(); err != nil {
		t.Skipf("commit %s is not in this checkout's history (shallow clone?): %v %s", oldBuildCommit, err, out)
	}
	src := t.TempDir()
	archive := exec.Command(git, "archive", "--format=tar", oldBuildCommit)
	archive.Dir = ".."
	tar := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	tar.Stdin = pipe
	if err := tar.Start(); err != nil {
		t.Fatal(err)
	}
	if err := archive.Run(); err != nil {
		t.Fatal("git archive:", err)
	}
	if err := tar.Wait(); err != nil {
		t.Fatal("tar:", err)
	}
	bin := filepath.Join(t.TempDir(), "old.test")
	build := exec.Command("go", "test", "-c", "-o", bin, "./statelock")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the older exactfs (%s): %v\n%s", oldBuildCommit, err, out)
	}
	return bin
}

// oldWorkerCmd is workerCmd for the older build.
func oldWorkerCmd(ctx context.Context, bin, mode string, env ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{workerEnv + "=" + mode}, env...)...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// An older exactfs (no kernel slots) and this one on one state file (SPEC
// §4.8.5): the older judge asks about the whole holder range and so reads
// a slot holder as alive (never steals from it), the older holder's
// exclusive lock and a slot lock conflict, and each side reclaims the
// other's SIGKILLed holder at once (a dead slot holder leaves no lock in
// the range; an old record has no slot and is judged by the range). Two
// workers of each build increment one counter: no update lost, no two
// holds overlap.
func TestOlderBuildBeside(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an older exactfs; skipped in -short mode")
	}
	requireSlot(t)
	old := oldWorkerBinary(t)
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	common := []string{"STATELOCK_STATE=" + e.state, "STATELOCK_CONFIG=" + e.configRoot, "STATELOCK_COUNTER_ONLY=1"}

	// A new holder SIGKILLed: the older build's judge finds no lock in
	// the whole range and reclaims at once (its wait is 20 s; the record
	// is judged, not waited out).
	hold := workerCmd(ctx, "hold", common...)
	startAndWaitLine(t, hold, "H", time.Minute)
	if b := mustRead(t, e.lock); !bytes.Contains(b, []byte(`"ofd_slot":`)) {
		t.Fatalf("the new holder's record carries no slot: %s", b)
	}
	hold.Process.Signal(syscall.SIGKILL)
	hold.Wait()
	one := oldWorkerCmd(ctx, old, "update", append(common, "STATELOCK_N=1", "STATELOCK_WAIT_MS=20000",
		"STATELOCK_LOG="+filepath.Join(e.dir, "first.log"), "STATELOCK_PREFIX=first")...)
	if out, err := one.CombinedOutput(); err != nil {
		t.Fatalf("the older build after a SIGKILLed slot holder: %v\n%s", err, out)
	}
	// And the other way round.
	oldHold := oldWorkerCmd(ctx, old, "hold", common...)
	startAndWaitLine(t, oldHold, "H", time.Minute)
	if b := mustRead(t, e.lock); bytes.Contains(b, []byte(`"ofd_slot":`)) {
		t.Fatalf("the older holder's record carries a slot: %s", b)
	}
	oldHold.Process.Signal(syscall.SIGKILL)
	oldHold.Wait()
	two := workerCmd(ctx, "update", append(common, "STATELOCK_N=1", "STATELOCK_WAIT_MS=20000",
		"STATELOCK_LOG="+filepath.Join(e.dir, "second.log"), "STATELOCK_PREFIX=second")...)
	if out, err := two.CombinedOutput(); err != nil {
		t.Fatalf("this build after a SIGKILLed older holder: %v\n%s", err, out)
	}

	const each = 60
	logs := []string{filepath.Join(e.dir, "first.log"), filepath.Join(e.dir, "second.log")}
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for i := range 4 {
		logf := filepath.Join(e.dir, fmt.Sprintf("w%d.log", i))
		logs = append(logs, logf)
		env := append(common, fmt.Sprintf("STATELOCK_N=%d", each), "STATELOCK_LOG="+logf, fmt.Sprintf("STATELOCK_PREFIX=w%d", i))
		var cmd *exec.Cmd
		if i%2 == 0 {
			cmd = oldWorkerCmd(ctx, old, "update", env...)
		} else {
			cmd = workerCmd(ctx, "update", env...)
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmds, outs = append(cmds, cmd), append(outs, &out)
	}
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("worker %d (older build: %v): %v\n%s", i, i%2 == 0, err, outs[i])
		}
	}
	s, err := parseCounter(mustRead(t, e.state))
	if err != nil {
		t.Fatal(err)
	}
	if want := 4*each + 2; s.N != want {
		t.Fatalf("counter %d, want %d", s.N, want)
	}
	r, err := holdlog.Check(false, logs...)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Intervals) != 4*each+2 || r.MaxConcurrency != 1 {
		t.Fatalf("hold intervals: %v", r)
	}
	if b := mustRead(t, e.lock); !strings.Contains(string(b), `"released":true`) {
		t.Fatalf("F.lock after the run is not a tombstone: %s", b)
	}
}
