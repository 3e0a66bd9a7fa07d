//go:build linux

package statelock

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
)

// plantCrashedClaim leaves what a taker killed inside its claim leaves: the
// empty claim directory and its sidecar, both 5 s old. sidecar nil: a
// record of a dead pid on this host (a reaped child of the test).
func plantCrashedClaim(t *testing.T, e *testEnv, sidecar []byte) {
	t.Helper()
	if err := os.Mkdir(e.claim, 0o700); err != nil {
		t.Fatal(err)
	}
	if sidecar == nil {
		sidecar = (&Record{Pid: int64(deadPid(t)), StartTime: "1", Token: exactfs.NewUUID(), HostID: e.host.ID}).Encode()
	}
	if err := os.WriteFile(e.sidecar, sidecar, 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-5 * time.Second)
	os.Chtimes(e.sidecar, old, old)
	os.Chtimes(e.claim, old, old)
}

// runKilledAt runs a worker (mode) on e's state file that SIGKILLs itself
// at the hook point, and fails the test unless it died by that signal.
func runKilledAt(t *testing.T, e *testEnv, mode, point string, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := workerCmd(ctx, mode, append([]string{"STATELOCK_STATE=" + e.state, "STATELOCK_CONFIG=" + e.configRoot,
		"STATELOCK_KILL_HOOK=" + point}, env...)...)
	w.Stderr = os.Stderr
	err := w.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the %s worker was not killed at %s: %v", mode, point, err)
	}
}

// deadPid is the pid of a child that has exited and been reaped.
func deadPid(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}

// outcomeOK fails the test unless err is success or a retry (ErrLocked):
// never lock_inspection_failed or any other error.
func outcomeOK(t *testing.T, who string, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, ErrLocked) {
		t.Fatalf("%s: %v (want success or a retry)", who, err)
	}
}

func lockAndRelease(t *testing.T, e *testEnv, opts ...Option) error {
	t.Helper()
	h, err := TryLock(e.state, e.opts(opts...)...)
	if err == nil {
		if uerr := h.Unlock(); uerr != nil {
			t.Fatalf("unlock: %v", uerr)
		}
	}
	return err
}

// Two reclaimers race one crashed claim: while the first is between its
// verdict and the removal (it holds the claim's reclaim guard), a second
// one judges the same claim and must keep its hands off (a retry, the claim
// untouched); a third caller arriving after the first detached the claim
// takes the free name normally; the first finishes. Before the guard, the
// second reclaimer could detach whatever a new taker had put at the name
// between the first one's detach and its own compare: a live claim (its
// taker then failed with "no longer the directory we took") left at
// F.lock.transition.removing, where it failed every later reclaim with
// quarantine_collision.
func TestReclaimersRaceOneCrashedClaim(t *testing.T) {
	e := newEnv(t)
	plantCrashedClaim(t, e, nil)
	claimIno := inode(t, e.claim)
	var second, third error
	secondRan, thirdRan := false, false
	defer hook.Set(hook.LockBeforeClaimRemoval, func(string) {
		if secondRan {
			return
		}
		secondRan = true
		second = lockAndRelease(t, e)
		if got := inode(t, e.claim); got != claimIno {
			t.Errorf("the second reclaimer touched the claim the first was removing (inode %d, now %d)", claimIno, got)
		}
	})()
	defer hook.Set(hook.TreeDetached, func(p string) {
		if thirdRan || filepath.Base(p) != filepath.Base(e.claim) {
			return
		}
		thirdRan = true
		third = lockAndRelease(t, e)
	})()
	first := lockAndRelease(t, e)
	if !secondRan || !thirdRan {
		t.Fatalf("the race windows were not reached (second %v, third %v)", secondRan, thirdRan)
	}
	outcomeOK(t, "second reclaimer", second)
	if second == nil {
		t.Fatal("the second reclaimer took the lock while the first was removing the crashed claim")
	}
	if third != nil {
		t.Fatalf("a caller after the detach: %v (the claim name was free)", third)
	}
	if first != nil {
		t.Fatalf("first reclaimer: %v", first)
	}
	assertSteadyState(t, e, true)
}

// A live peer rewrites the sidecar in place while a reclaimer reads it: the
// crashed claim the reclaimer judged was removed by another reclaimer, and
// a live peer took the claim again and is writing its record into the
// sidecar (in place, as it does on reuse and release). The reclaimer must
// call that contention (the claim is busy: look again), never an inspection
// failure; once the peer releases, the lock is taken. (053199c failed with
// lock_inspection_failed: changed_during_read on the sidecar.)
func TestLivePeerRewritesSidecarDuringReclaim(t *testing.T) {
	e := newEnv(t)
	plantCrashedClaim(t, e, nil)
	rewrote := false
	defer hook.Set(hook.CaptureRead, func(p string) {
		if rewrote || filepath.Base(p) != filepath.Base(e.sidecar) {
			return
		}
		rewrote = true
		// Another reclaimer removed the crashed claim, and the peer made
		// its own and rewrites the sidecar: same inode, new bytes.
		if err := os.Remove(e.claim); err != nil {
			t.Error(err)
		}
		if err := os.Mkdir(e.claim, 0o700); err != nil {
			t.Error(err)
		}
		live := (&Record{Pid: int64(os.Getppid()), StartTime: "1", Token: exactfs.NewUUID(), HostID: e.host.ID}).Encode()
		f, err := os.OpenFile(e.sidecar, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Error(err)
			return
		}
		f.Write(live)
		f.Close()
		future := time.Now().Add(time.Second)
		os.Chtimes(e.sidecar, future, future)
	})()
	_, err := TryLock(e.state, e.opts()...)
	if !rewrote {
		t.Fatal("the race window was not reached")
	}
	var le *LockError
	if !errors.As(err, &le) || le.Code != ReasonTransitionClaimTimeout || !errors.Is(err, ErrLocked) {
		t.Fatalf("reclaimer racing a live peer: %v (want the claim busy)", err)
	}
	// The peer releases: its sidecar becomes a tombstone, its claim goes.
	if err := os.WriteFile(e.sidecar, tombstone(exactfs.NewUUID(), e.host.ID).Encode(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(e.claim); err != nil {
		t.Fatal(err)
	}
	if err := lockAndRelease(t, e); err != nil {
		t.Fatalf("after the peer released: %v", err)
	}
	assertSteadyState(t, e, true)
}

// A reclaimer SIGKILLed right after it detached the crashed claim to
// F.lock.transition.removing: the next claimant replays the removal to
// completion and takes the lock, whether the sidecar the crash left is a
// dead record or a tombstone; and a later crashed claim is still reclaimed
// (a detached one in the way is finished first, not a collision).
func TestKilledReclaimerReplayed(t *testing.T) {
	for _, c := range []struct {
		name      string
		tombstone bool
		again     bool
	}{
		{"dead sidecar", false, false},
		{"tombstone sidecar", true, false},
		{"then another crashed claim", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			var side []byte
			if c.tombstone {
				side = tombstone(exactfs.NewUUID(), e.host.ID).Encode()
			}
			plantCrashedClaim(t, e, side)
			runKilledAt(t, e, "killat", hook.TreeDetached, "STATELOCK_KILL_IN=lock")
			removing := e.claim + exactfs.RemovingSuffix
			if fi, err := os.Lstat(removing); err != nil || !fi.IsDir() {
				t.Fatalf("no detached claim at %s: %v", removing, err)
			}
			if _, err := os.Lstat(e.claim); !os.IsNotExist(err) {
				t.Fatalf("the claim name is not free after the detach: %v", err)
			}
			if c.again {
				// A second crash: the next claim taker dies inside its claim too.
				os.Remove(e.sidecar)
				plantCrashedClaim(t, e, nil)
			}
			if err := lockAndRelease(t, e); err != nil {
				t.Fatalf("next claimant: %v", err)
			}
			if _, err := os.Lstat(removing); !os.IsNotExist(err) {
				t.Fatalf("the detached claim was not replayed: %v", err)
			}
			assertSteadyState(t, e, true)
		})
	}
}

// A stale legacy F.lock/ directory whose earlier removal was killed after
// its detach (F.lock.removing, with or without its info file) is reclaimed:
// the detached one is finished first. A detached tree that no removal of
// ours leaves (another file in it) is kept and named.
func TestLegacyRemovalReplayed(t *testing.T) {
	for _, c := range []struct {
		name  string
		files []string
		ok    bool
	}{
		{"with info", []string{"info"}, true},
		{"emptied", nil, true},
		{"foreign file", []string{"info", "x"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.legacyDir(t, nil, time.Minute) // empty and 60 s old: stale
			removing := e.lock + exactfs.RemovingSuffix
			if err := os.Mkdir(removing, 0o700); err != nil {
				t.Fatal(err)
			}
			for _, f := range c.files {
				os.WriteFile(filepath.Join(removing, f), legacyInfoFor(4242, e.host.ID), 0o600)
			}
			err := lockAndRelease(t, e)
			_, lerr := os.Lstat(removing)
			if c.ok {
				if err != nil {
					t.Fatal(err)
				}
				if !os.IsNotExist(lerr) {
					t.Fatalf("the detached legacy directory was not finished: %v", lerr)
				}
				assertSteadyState(t, e, true)
				return
			}
			var le *LockError
			if !errors.As(err, &le) || le.Code != ReasonLegacyUnprovenanced || !strings.Contains(err.Error(), removing) {
				t.Fatalf("TryLock: %v (want the legacy lock refused, naming %s)", err, removing)
			}
			if lerr != nil {
				t.Fatalf("the foreign detached tree was removed: %v", lerr)
			}
		})
	}
}

// A claim's F.lock.transition.removing that no interrupted removal of ours
// leaves (a file in it) is kept, and the crashed claim it blocks is reported
// in the retry-worthy error, naming it, never as an inspection failure.
func TestForeignDetachedClaimKept(t *testing.T) {
	e := newEnv(t)
	plantCrashedClaim(t, e, nil)
	removing := e.claim + exactfs.RemovingSuffix
	if err := os.Mkdir(removing, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(removing, "x"), []byte("someone's"), 0o600)
	_, err := TryLock(e.state, e.opts()...)
	var le *LockError
	if !errors.As(err, &le) || le.Code != ReasonTransitionClaimTimeout || !errors.Is(err, ErrLocked) ||
		!strings.Contains(err.Error(), removing) {
		t.Fatalf("TryLock: %v (want the claim busy, naming %s)", err, removing)
	}
	t.Log(err)
	if got := string(mustRead(t, filepath.Join(removing, "x"))); got != "someone's" {
		t.Fatalf("the foreign file: %q", got)
	}
	if fi, err := os.Lstat(e.claim); err != nil || !fi.IsDir() {
		t.Fatalf("the crashed claim was removed although its removal could not be proved: %v", err)
	}
}

// TestDeadSidecarRewrittenInPlace: a taker that finds a dead record in the
// sidecar under its fresh claim (what a power cut that caught the
// reference between its mkdir and its sidecar write leaves, once the
// directory is lost) rewrites it in place and keeps its inode. The old
// code unlinked it and created it again: a kill between the two left a
// claim directory made in this boot with no sidecar, which no automatic
// rule breaks, and every peer waited on it until someone ran recover.
func TestDeadSidecarRewrittenInPlace(t *testing.T) {
	e := newEnv(t)
	dead := (&Record{Pid: int64(deadPid(t)), StartTime: "1", Token: exactfs.NewUUID(), HostID: e.host.ID}).Encode()
	if err := os.WriteFile(e.sidecar, dead, 0o600); err != nil {
		t.Fatal(err)
	}
	ino := inode(t, e.sidecar)
	// Held open so that, were it unlinked, its inode number could not be
	// handed to the file created after it.
	keep, err := os.Open(e.sidecar)
	if err != nil {
		t.Fatal(err)
	}
	defer keep.Close()
	if err := lockAndRelease(t, e); err != nil {
		t.Fatal(err)
	}
	if got := inode(t, e.sidecar); got != ino {
		t.Fatalf("the dead sidecar was unlinked and created again (inode %d, now %d)", ino, got)
	}
	assertSteadyState(t, e, true)
}
