//go:build !exactfs_portable

package wake

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/sys"
	"github.com/exactfs/exactfs/internal/testfs"
)

func openDir(t *testing.T) (*exactfs.Dir, string) {
	t.Helper()
	dir := t.TempDir()
	d, err := exactfs.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, dir
}

func mustOpen(t *testing.T, d *exactfs.Dir) *Mailbox {
	t.Helper()
	m, err := Open(d, "state.json.lock", true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestOpenCreatesWhole: the mailbox is created 0600, one link, Size bytes
// of zeros (every seat idle), under its private name.
func TestOpenCreatesWhole(t *testing.T) {
	t.Parallel()
	d, dir := openDir(t)
	m := mustOpen(t, d)
	fi, err := os.Lstat(filepath.Join(dir, Prefix+"state.json.lock"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Size() != Size {
		t.Fatalf("mode %v size %d", fi.Mode(), fi.Size())
	}
	for i := range Seats {
		if m.StateOf(i) != Idle {
			t.Fatalf("seat %d is %v", i, m.StateOf(i))
		}
	}
	m2, err := Open(d, "state.json.lock", false)
	if err != nil {
		t.Fatal(err)
	}
	m2.Close()
	if _, err := Open(d, "other.lock", false); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("no create of a missing mailbox: %v", err)
	}
}

// TestUntrustedNeverWritten: a mailbox owned by another uid, with two
// links, another mode or another size is refused with ErrUnusable, and its
// bytes and mtime are unchanged (it was never mapped writable nor
// written). Without check, Open maps and uses each of them.
func TestUntrustedNeverWritten(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(t *testing.T, p string)
	}{
		{"mode 0644", func(t *testing.T, p string) { os.Chmod(p, 0o644) }},
		{"two links", func(t *testing.T, p string) {
			if err := os.Link(p, p+".other"); err != nil {
				t.Fatal(err)
			}
		}},
		{"short", func(t *testing.T, p string) { os.Truncate(p, Size-1) }},
		{"long", func(t *testing.T, p string) { os.Truncate(p, Size+4096) }},
		{"another uid", func(t *testing.T, p string) {
			testfs.RequireRoot(t)
			if err := os.Chown(p, 4242, 4242); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, dir := openDir(t)
			p := filepath.Join(dir, Prefix+"state.json.lock")
			// A mailbox-shaped file with a WAITING seat 0 and a marker.
			b := make([]byte, Size)
			b[0] = byte(Waiting)
			copy(b[16:], "marker")
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			c.setup(t, p)
			old := time.Now().Add(-time.Hour)
			os.Chtimes(p, old, old)
			before, _ := os.ReadFile(p)
			m, err := Open(d, "state.json.lock", true)
			if err == nil {
				m.Close()
				t.Fatalf("%s: opened", c.name)
			}
			if !errors.Is(err, ErrUnusable) {
				t.Fatalf("%s: %v", c.name, err)
			}
			t.Log(err)
			after, _ := os.ReadFile(p)
			fi, _ := os.Stat(p)
			if !bytes.Equal(before, after) || !fi.ModTime().Equal(old) {
				t.Fatalf("%s: the untrusted mailbox was written", c.name)
			}
		})
	}
}

// TestGrantCycle: a seated waiter is granted its exact bytes, in ticket
// order, and woken from its futex sleep.
func TestGrantCycle(t *testing.T) {
	t.Parallel()
	d, _ := openDir(t)
	owner := mustOpen(t, d)
	waiter := mustOpen(t, d)
	late, err := waiter.Take([]byte(`{"late":1}`), 200)
	if err != nil {
		t.Fatal(err)
	}
	early, err := waiter.Take([]byte(`{"early":1}`), 100)
	if err != nil {
		t.Fatal(err)
	}
	if early.Index() == late.Index() {
		t.Fatal("two waiters on one seat")
	}
	woke := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		for early.State() != Granted && time.Since(start) < 10*time.Second {
			early.Sleep(5 * time.Second)
		}
		woke <- time.Since(start)
	}()
	time.Sleep(20 * time.Millisecond)
	g := owner.Grant(nil)
	if g == nil || g.Seat() != early.Index() || string(g.Record()) != `{"early":1}` {
		t.Fatalf("grant %+v", g)
	}
	if early.Withdraw() {
		t.Fatal("withdrew a seat that is GRANTING")
	}
	g.Done()
	if d := <-woke; d > 4*time.Second {
		t.Fatalf("the waiter was not woken (%s)", d)
	}
	early.Leave()
	if !late.Withdraw() {
		t.Fatal("could not withdraw a WAITING seat")
	}
	late.Leave()
	if g := owner.Grant(nil); g != nil {
		t.Fatal("granted an idle seat")
	}
}

// TestDeadWaiterNeverGranted: a WAITING seat whose seat lock is gone (its
// waiter's descriptor closed, as at its death) is never granted.
func TestDeadWaiterNeverGranted(t *testing.T) {
	t.Parallel()
	d, _ := openDir(t)
	owner := mustOpen(t, d)
	waiter := mustOpen(t, d)
	s, err := waiter.Take([]byte(`{"w":1}`), 1)
	if err != nil {
		t.Fatal(err)
	}
	s.f.Close() // the kernel drops the seat lock, as when the waiter dies
	if owner.StateOf(s.Index()) != Waiting {
		t.Fatal("setup")
	}
	if g := owner.Grant(func(int) bool { return false }); g != nil {
		t.Fatalf("granted the seat of a dead waiter: %d", g.Seat())
	}
	// A new waiter takes the free seat; the stale word never matters.
	s2, err := waiter.Take([]byte(`{"w":2}`), 2)
	if err != nil {
		t.Fatal(err)
	}
	g := owner.Grant(nil)
	if g == nil || string(g.Record()) != `{"w":2}` {
		t.Fatalf("%+v", g)
	}
	g.Cancel()
	if s2.State() != Waiting {
		t.Fatalf("cancel left %v", s2.State())
	}
	s2.Withdraw()
	s2.Leave()
}

// TestRecoverFromDeadGranter: a seat left GRANTING by a granter whose
// grant byte is gone goes back to WAITING; one whose granter is alive does
// not. Without Recover the waiter would stay GRANTING for ever.
func TestRecoverFromDeadGranter(t *testing.T) {
	t.Parallel()
	d, _ := openDir(t)
	owner := mustOpen(t, d)
	waiter := mustOpen(t, d)
	s, _ := waiter.Take([]byte(`{"w":1}`), 1)
	g := owner.Grant(nil)
	if g == nil {
		t.Fatal("no grant")
	}
	if s.Recover() {
		t.Fatal("recovered from a live granter")
	}
	// The granter dies: its descriptor (and grant byte) goes.
	sys.OFDUnlock(int(owner.f.Fd()), GrantLockBase+int64(g.Seat()), 1)
	if !s.Recover() || s.State() != Waiting {
		t.Fatalf("not recovered: %v", s.State())
	}
	// The dead granter's later CASes (had it lived on) change nothing.
	g.Done()
	if s.State() != Waiting {
		t.Fatalf("a stale grant moved the seat to %v", s.State())
	}
	s.Withdraw()
	s.Leave()
}

// TestFutexAcrossProcesses: a waiter in another process sleeping on its
// seat is woken by Done here (shared futex on the file mapping).
func TestFutexAcrossProcesses(t *testing.T) {
	if os.Getenv("WAKE_CHILD") != "" {
		return
	}
	t.Parallel()
	d, dir := openDir(t)
	owner := mustOpen(t, d)
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildWaiter$", "-test.v")
	cmd.Env = append(os.Environ(), "WAKE_CHILD="+dir)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var g *Grant
	for start := time.Now(); g == nil; {
		if time.Since(start) > 20*time.Second {
			cmd.Process.Kill()
			t.Fatalf("the child never seated: %s", out)
		}
		time.Sleep(5 * time.Millisecond)
		g = owner.Grant(nil)
	}
	time.Sleep(50 * time.Millisecond) // let it sleep in the futex
	g.Done()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !bytes.Contains(out.Bytes(), []byte("granted after")) {
		t.Fatal(out.String())
	}
}

func TestChildWaiter(t *testing.T) {
	dir := os.Getenv("WAKE_CHILD")
	if dir == "" {
		t.Skip("the child of TestFutexAcrossProcesses")
	}
	d, err := exactfs.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Open(d, "state.json.lock", false)
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Take([]byte(`{"child":1}`), 7)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var sleeps atomic.Int32
	for s.State() != Granted {
		if time.Since(start) > 15*time.Second {
			t.Fatal("never granted")
		}
		s.Sleep(10 * time.Second)
		sleeps.Add(1)
	}
	t.Logf("granted after %s, %d sleeps", time.Since(start), sleeps.Load())
	s.Leave()
}

// TestSeatDescriptorReused: Leave keeps a seat's descriptor for the next
// Take of this process (no open per seated wait), and a kept descriptor
// holds no lock: the seat it held is free to every other process at once,
// and a Take through it locks only the seat it takes. A descriptor still
// holding its old seat byte would make that seat look taken by a live
// waiter for as long as the mailbox stays mapped.
func TestSeatDescriptorReused(t *testing.T) {
	t.Parallel()
	d, _ := openDir(t)
	owner := mustOpen(t, d)
	waiter, err := Open(d, "state.json.lock", true) // closed below, once
	if err != nil {
		t.Fatal(err)
	}
	ofd := int(owner.f.Fd())
	s, err := waiter.Take([]byte(`{"w":1}`), 5)
	if err != nil {
		t.Fatal(err)
	}
	first, i := s.f, s.Index()
	if held, known := sys.OFDHeld(ofd, int64(i), 1); !held || !known {
		t.Fatalf("seat %d: lock not seen (held %v, known %v)", i, held, known)
	}
	if !s.Withdraw() {
		t.Fatal("could not withdraw")
	}
	s.Leave()
	if n := waiter.Spares(); n != 1 {
		t.Fatalf("%d descriptors kept after Leave, want 1", n)
	}
	if held, _ := sys.OFDHeld(ofd, int64(i), 1); held {
		t.Fatalf("seat %d still locked by the kept descriptor", i)
	}
	// The next seat (another index) goes through the kept descriptor.
	s2, err := waiter.Take([]byte(`{"w":2}`), 6)
	if err != nil {
		t.Fatal(err)
	}
	if s2.f != first || waiter.Spares() != 0 {
		t.Fatal("Take opened a new descriptor while one was kept")
	}
	if s2.Index() == i {
		t.Fatal("setup: want another seat index")
	}
	if held, _ := sys.OFDHeld(ofd, int64(i), 1); held {
		t.Fatalf("seat %d locked again by a Take of seat %d", i, s2.Index())
	}
	if held, known := sys.OFDHeld(ofd, int64(s2.Index()), 1); !held || !known {
		t.Fatal("the new seat's lock is not seen")
	}
	g := owner.Grant(nil)
	if g == nil || string(g.Record()) != `{"w":2}` {
		t.Fatalf("%+v", g)
	}
	g.Done()
	s2.Leave()
	// Close closes the kept descriptors.
	if err := waiter.Close(); err != nil {
		t.Fatal(err)
	}
	if waiter.Spares() != 0 {
		t.Fatal("Close kept descriptors")
	}
	if _, err := first.Stat(); err == nil {
		t.Fatal("a kept descriptor outlived Close")
	}
}

// TestRingWakesCountedSleeper: Ring makes its futex wake only for an owner
// counted in BellWait, and that owner is woken (long before its 10 s);
// the count goes back to zero when it returns, and a ring with nobody
// asleep only moves the bell. A ring that skipped the wake for a sleeper
// that counted itself would leave it asleep for its whole idle time.
func TestRingWakesCountedSleeper(t *testing.T) {
	t.Parallel()
	d, _ := openDir(t)
	owner := mustOpen(t, d)
	waiter := mustOpen(t, d)
	seen := owner.Bell()
	waiter.Ring() // nobody asleep: the bell moves, no wake needed
	if owner.Bell() == seen {
		t.Fatal("the ring did not move the bell")
	}
	if n := atomic.LoadUint32(owner.bellSleepers()); n != 0 {
		t.Fatalf("%d sleepers counted with nobody asleep", n)
	}
	seen = owner.Bell()
	woke := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		owner.BellWait(seen, 10*time.Second)
		woke <- time.Since(start)
	}()
	for atomic.LoadUint32(waiter.bellSleepers()) == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // let it reach the futex
	waiter.Ring()
	if d := <-woke; d > 5*time.Second {
		t.Fatalf("the owner asleep on the bell was not woken (%s)", d)
	}
	if n := atomic.LoadUint32(owner.bellSleepers()); n != 0 {
		t.Fatalf("%d sleepers still counted after BellWait returned", n)
	}
}
