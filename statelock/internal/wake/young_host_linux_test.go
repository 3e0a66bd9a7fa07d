//go:build linux && !exactfs_portable

package wake

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/exactfs/exactfs/internal/sys"
)

// TestLingerReadsItsPolicyYoungHost runs TestLingerReadsItsPolicy on a
// host whose CLOCK_MONOTONIC reads five seconds (a machine just booted),
// through a time namespace. The test gave policy b a Barge of an hour:
// Now()-Barge was then negative, Queue.Ahead reads a negative ticket as
// "any waiter", so b's young waiter looked starving and Linger said 0
// instead of b's HandoffDelay — a test that failed on any machine up for
// less than an hour (found in review; fails with Barge = time.Hour).
func TestLingerReadsItsPolicyYoungHost(t *testing.T) {
	if os.Getenv("WAKE_YOUNG_HOST_CHILD") != "" {
		t.Skip("inside the child")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare:", err)
	}
	now, err := sys.MonotonicNs()
	if err != nil {
		t.Skip(err)
	}
	const uptime = 5 // seconds
	off := now/1e9 - uptime
	if off <= 0 {
		t.Skip("this host is young already")
	}
	cmd := exec.Command(unshare, "--time", "--monotonic", "-"+strconv.FormatInt(off, 10), "--fork",
		os.Args[0], "-test.run=^TestLingerReadsItsPolicy$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "WAKE_YOUNG_HOST_CHILD=1")
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "unshare failed") || strings.Contains(string(out), "unshare:") {
		t.Skipf("no time namespace here: %s", out)
	}
	if err != nil {
		t.Fatalf("TestLingerReadsItsPolicy on a host up for %d s: %v\n%s", uptime, err, out)
	}
}
