package main

import (
	"strings"
	"testing"

	"github.com/exactfs/exactfs/statelock"
)

// TestRecoverReportsKept: what statelock.Recover keeps because the kernel
// could not tell whether it is in use (a keep- Action: macOS, no OFD locks
// and no lease probe) is printed as kept with its evidence (which says how
// to remove it by hand), and the run ends with exit status 75, not 0: the
// user has something left to do. (statelock's TestRecoverKeepsUnknownLock
// and TestRecoverKeepsUnknownClaim prove Recover returns such an Action;
// a CLI run cannot make the Linux kernel answer "unknown".)
func TestRecoverReportsKept(t *testing.T) {
	var out strings.Builder
	r := &recovery{w: &out}
	r.report([]statelock.Action{{Kind: statelock.KindKeepLock, Path: "/d/s.json.lock",
		Evidence: "malformed owner record of 9 bytes, 1m0s old; kept: the kernel cannot tell. If no process has it open (check with lsof), remove it by hand: rm /d/s.json.lock"}})
	got := out.String()
	for _, want := range []string{"keep lock /d/s.json.lock\n", "remove it by hand: rm /d/s.json.lock\n", "  kept, nothing removed\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if code := exitCode(r.outcome()); code != exitBusy {
		t.Errorf("exit status %d for a run that kept something for a person, want %d", code, exitBusy)
	}
}
