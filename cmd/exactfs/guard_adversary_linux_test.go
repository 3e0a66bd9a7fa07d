package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/holdlog"
)

// TestAdversaryGroupKillTakesSetsidTree: a person ends a hung `exactfs lock`
// job the usual way, SIGKILL to its whole process group (kill -9 %1, kill
// -9 -PGID, a supervisor's group kill), while a process that CMD moved to
// a session of its own (setsid) is inside a slow read-modify-write. A
// second `exactfs lock` then takes the lock over at once. No process of the
// first CMD's tree may go on after that: the CLOCK_MONOTONIC hold intervals
// do not overlap and the counter counts every completed read-modify-write.
// Fails before the guard left exactfs's process group: the group kill
// killed the guard with exactfs, the setsid worker was reparented to init
// and finished its read-modify-write unlocked (overlap; counter 1 after two
// completed increments).
func TestAdversaryGroupKillTakesSetsidTree(t *testing.T) {
	dir := t.TempDir()
	counter := filepath.Join(dir, "counter")
	if err := os.WriteFile(counter, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	log1, log2 := filepath.Join(dir, "hold1.log"), filepath.Join(dir, "hold2.log")
	holder := exec.Command(exactfsBin, "lock", "s", "--", "sh", "-c",
		"setsid "+workerCmd(t, "rmw", counter, log1, "1500ms")+"; true")
	// A process group of its own, as a shell's job has: the test can kill
	// the group without killing itself.
	holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	waited, stderr := startGuardedHolder(t, holder, dir)
	t.Cleanup(func() {
		// Whatever survived the group kill (the setsid worker, on the
		// old code) is ended by its pid, found by its marker.
		for _, line := range liveWith(dir) {
			if pid, err := strconv.Atoi(line[:strings.IndexByte(line, ':')]); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	waitEntered(t, log1, waited, stderr)

	if err := syscall.Kill(-holder.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-waited
	r := runIn(t, dir, 20*time.Second, "", "lock", "--timeout", "15s", "s", "--", "sh", "-c", workerCmd(t, "rmw", counter, log2, "300ms"))
	expectCode(t, r, 0, "the second lock")
	waitGone(t, dir, 10*time.Second)

	rep, err := holdlog.Check(true, log1, log2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Overlaps) != 0 {
		t.Fatalf("hold logs %s %s: %s: the first CMD's setsid worker went on after a group kill, unlocked", log1, log2, rep)
	}
	got := strings.TrimSpace(mustRead(t, counter))
	if want := strconv.Itoa(len(rep.Intervals)); got != want {
		t.Fatalf("counter %s after %d completed read-modify-writes (%s): an update was lost", got, len(rep.Intervals), rep)
	}
}
