//go:build !exactfs_portable

package wake

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/sys"
)

// Linger, the release's decision of when its close wakes the first waiter,
// read from the knobs of the Policy it is given (two policies side by side,
// so no package variable can stand in for them): no waiter keeps the
// descriptor for ParkIdle, a young waiter for HandoffDelay, an old one (or
// an away releaser) not at all, and a new holder's lock for ParkIdle.
func TestLingerReadsItsPolicy(t *testing.T) {
	t.Parallel()
	const base = 1 << 40
	path := filepath.Join(t.TempDir(), "F.lock")
	if err := os.WriteFile(path, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := func() int {
		t.Helper()
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		fd, err := sys.Dup(int(f.Fd()))
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		return fd
	}
	rel := open()
	defer sys.Close(rel)
	a, b := NewPolicy(base), NewPolicy(base)
	// b's Barge: longer than the old waiter's age below (2·DefaultBarge), and
	// short enough that Now()-Barge is positive on a machine up for seconds
	// (an hour was negative on a fresh CI machine, which Ahead reads as
	// "any waiter").
	b.ParkIdle, b.HandoffDelay, b.Barge = 7*time.Second, 3*time.Second, time.Second
	check := func(what string, p *Policy, away bool, want time.Duration) {
		t.Helper()
		if got := p.Linger(rel, away); got != want {
			t.Fatalf("%s: Linger = %v, want %v", what, got, want)
		}
	}
	check("no waiter", &a, false, DefaultParkIdle)
	check("no waiter", &b, false, 7*time.Second)

	young := open()
	if !a.Join(young, Now()-int64(DefaultBarge/10)) {
		sys.Close(young)
		t.Fatal("Join failed (OFD locks on the temporary directory)")
	}
	check("a young waiter", &a, false, DefaultHandoffDelay)
	check("a young waiter", &b, false, 3*time.Second)
	check("a young waiter, the releaser away", &a, true, 0)

	old := open()
	if !a.Join(old, Now()-int64(2*DefaultBarge)) {
		t.Fatal("Join failed")
	}
	check("an old waiter", &a, false, 0)
	check("a waiter old by a's Barge, young by b's", &b, false, 3*time.Second)
	sys.Close(old) // their tickets go with their descriptors
	sys.Close(young)

	holder := open()
	defer sys.Close(holder)
	if err := sys.OFDReadLock(holder, 0, base); err != nil {
		t.Fatal(err)
	}
	check("a new holder", &a, false, DefaultParkIdle)
}
