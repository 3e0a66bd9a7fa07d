//go:build linux && !exactfs_portable

package wake

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/sys"
)

// TestTicketIsHostMonotonic: Now, read without a system call, is
// CLOCK_MONOTONIC as every process of the host reads it: between two
// clock_gettime readings of this process and of another one, give or take
// the anchor's error (a few microseconds; a millisecond allowed for a
// loaded machine). Tickets order Go waiters of different processes, so a
// per-process clock would serve them in the wrong order.
func TestTicketIsHostMonotonic(t *testing.T) {
	if os.Getenv("STATELOCK_TICKET_CHILD") != "" {
		before, _ := sys.MonotonicNs()
		tk := Now()
		after, _ := sys.MonotonicNs()
		os.Stdout.WriteString(strconv.FormatInt(before, 10) + " " + strconv.FormatInt(tk, 10) + " " + strconv.FormatInt(after, 10) + "\n")
		return
	}
	const slack = int64(time.Millisecond)
	check := func(who string, before, tk, after int64) {
		t.Helper()
		if tk < before-slack || tk > after+slack {
			t.Fatalf("%s: ticket %d outside the host clock's [%d, %d]", who, tk, before, after)
		}
	}
	for range 3 {
		before, _ := sys.MonotonicNs()
		tk := Now()
		after, _ := sys.MonotonicNs()
		check("this process", before, tk, after)
		time.Sleep(2 * time.Millisecond)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestTicketIsHostMonotonic$")
	cmd.Env = append(os.Environ(), "STATELOCK_TICKET_CHILD=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(strings.SplitN(string(out), "\n", 2)[0])
	if len(f) != 3 {
		t.Fatalf("child said %q", out)
	}
	var v [3]int64
	for i := range v {
		if v[i], err = strconv.ParseInt(f[i], 10, 64); err != nil {
			t.Fatalf("child said %q", out)
		}
	}
	check("another process", v[0], v[1], v[2])
	if mine := Now(); mine < v[1] {
		t.Fatalf("our ticket %d after the child's %d is earlier", mine, v[1])
	}
}
