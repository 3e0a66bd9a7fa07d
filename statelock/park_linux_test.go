package statelock

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/exactfs/exactfs/statelock/internal/wake"
)

// parkedOn returns the descriptors parked for the inode path names now.
func parkedOn(t *testing.T, path string) []*os.File {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	parked.Lock()
	defer parked.Unlock()
	var fs []*os.File
	for _, p := range parked.m[[2]uint64{st.Dev, st.Ino}] {
		fs = append(fs, p.f)
	}
	return fs
}

// A release parks the descriptors of F.lock and of the sidecar, and the
// next Lock of this process writes its records through them: nothing is
// opened again.
func TestReleaseParksRecordsForNextLock(t *testing.T) {
	e := newEnv(t)
	lockCycle(t, e)
	lockFd, sideFd := parkedOn(t, e.lock), parkedOn(t, e.sidecar)
	if len(lockFd) != 1 || len(sideFd) != 1 {
		t.Fatalf("parked after a release: %d on F.lock, %d on the sidecar; want 1 and 1", len(lockFd), len(sideFd))
	}
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if h.rec.f != lockFd[0] {
		t.Fatal("the lock was taken through a new descriptor, not the parked one")
	}
	if n := len(parkedOn(t, e.lock)) + len(parkedOn(t, e.sidecar)); n != 1 {
		t.Fatalf("while held: %d descriptors parked, want 1 (the sidecar's, back from the claim)", n)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	assertSteadyState(t, e, true)
}

// Parked descriptors are closed once idle for the policy's ParkIdle.
func TestParkedClosedWhenIdle(t *testing.T) {
	t.Parallel() // the knob is this test's own (withPolicy)
	e := newEnv(t)
	e.extra = []Option{withPolicy(func(p *wake.Policy) { p.ParkIdle = 30 * time.Millisecond })}
	lockCycle(t, e)
	deadline := time.Now().Add(5 * time.Second)
	for len(parkedOn(t, e.lock))+len(parkedOn(t, e.sidecar)) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("parked descriptors still open long after they went idle")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A parked descriptor is used only while the name still names its inode:
// F.lock replaced between two locks (by a copy of the same tombstone) is
// taken by the name; the parked inode is never written again.
func TestParkedRecordNotUsedAfterReplace(t *testing.T) {
	e := newEnv(t)
	lockCycle(t, e)
	old, err := os.Open(e.lock)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	before := mustRead(t, e.lock)
	tmp := e.lock + ".new"
	if err := os.WriteFile(tmp, before, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, e.lock); err != nil {
		t.Fatal(err)
	}
	lockCycle(t, e)
	after := make([]byte, 1024)
	n, _ := old.ReadAt(after, 0)
	if string(after[:n]) != string(before) {
		t.Fatalf("the parked inode, which F.lock no longer names, was written:\n%s\nwas\n%s", after[:n], before)
	}
	assertSteadyState(t, e, true)
}

// How a release treats the first waiter, whose wake is the close of the
// releaser's written descriptor of F.lock (IN_CLOSE_WRITE): a waiter queued
// for longer than testQueue.Barge is woken by the release itself; a younger one
// only after the policy's HandoffDelay, unless this process locks again first (then it
// is not woken at all: the lock is taken again); with no waiter, nothing is
// closed.
//
// Nothing here depends on how fast the machine is. The young waiter's
// ticket is dated an hour ahead, so it is younger than Barge at every
// release however long the test stalls (it was 5 ms old, and a stall of
// 45 ms made it old); the idle park lasts a minute (it was a second). The
// one window left is the HandoffDelay itself, whose timer is the property:
// a round in which HandoffDelay had passed since the cycle began before
// the test looked (or before its Lock took the descriptor back) proves
// nothing either way, and is run again; one that looked in time must see
// exactly the behaviour above.
func TestReleaseWakesFirstWaiterByItsAge(t *testing.T) {
	const handoffDelay = 500 * time.Millisecond
	e := newEnv(t)
	e.extra = []Option{withPolicy(func(p *wake.Policy) { p.HandoffDelay, p.ParkIdle = handoffDelay, time.Minute })}
	t.Cleanup(func() { closeParkedOn(e.lock) })
	lockCycle(t, e)
	in, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skip("no inotify:", err)
	}
	defer unix.Close(in)
	if _, err := unix.InotifyAddWatch(in, e.lock, unix.IN_CLOSE_WRITE); err != nil {
		t.Fatal(err)
	}
	closed := func() bool {
		var buf [4096]byte
		n, _ := unix.Read(in, buf[:])
		return n > 0
	}
	cycle := func() {
		t.Helper()
		closed() // drain
		lockCycle(t, e)
	}

	cycle()
	if closed() || len(parkedOn(t, e.lock)) != 1 {
		t.Fatal("no waiter: the release closed F.lock, or parked nothing")
	}

	old := plantTicket(t, e, 2*testQueue.Barge)
	cycle()
	if !closed() || len(parkedOn(t, e.lock)) != 0 {
		t.Fatal("a waiter older than testQueue.Barge was not woken by the release")
	}
	old.Close()

	young := plantTicket(t, e, -time.Hour) // arrives after every release below: never older than Barge
	defer young.Close()
	const tries = 20
	for try := 1; ; try++ {
		if try > tries {
			t.Fatalf("in %d rounds the test never looked within %v of a release: the machine is too stalled to tell", tries, handoffDelay)
		}
		begin := time.Now()
		cycle()
		early := closed()
		p := parkedOn(t, e.lock)
		if time.Since(begin) >= handoffDelay {
			continue // the delayed close may have come already
		}
		if early || len(p) != 1 {
			t.Fatal("a young waiter: the release closed F.lock at once, or parked nothing")
		}
		h, err := Lock(context.Background(), e.state, e.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		if h.rec.f != p[0] {
			if time.Since(begin) < handoffDelay {
				t.Fatal("the lock was taken again through a new descriptor while the released one was parked")
			}
			// The delay ran out before the Lock took the descriptor back.
			if err := h.Unlock(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		// Taken back: its timer can no longer close it.
		time.Sleep(handoffDelay + 100*time.Millisecond)
		if closed() {
			t.Fatal("the releaser took the lock back, and still the waiter was woken")
		}
		if err := h.Unlock(); err != nil {
			t.Fatal(err)
		}
		break
	}
	deadline := time.Now().Add(handoffDelay + 30*time.Second)
	for !closed() {
		if time.Now().After(deadline) {
			t.Fatal("the releaser never came back, and the young waiter was never woken")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// closeParkedOn is closeParked for the inode path names now only.
func closeParkedOn(path string) {
	fi, err := os.Lstat(path)
	if err != nil {
		return
	}
	st := fi.Sys().(*syscall.Stat_t)
	parked.Lock()
	list := append([]*parkedFile(nil), parked.m[[2]uint64{st.Dev, st.Ino}]...)
	var taken []*parkedFile
	for _, p := range list {
		if p.unpark() {
			p.timer.Stop()
			taken = append(taken, p)
		}
	}
	parked.Unlock()
	for _, p := range taken {
		p.f.Close()
	}
}
