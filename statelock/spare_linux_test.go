package statelock

import (
	"context"
	"errors"
	"github.com/exactfs/exactfs"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
)

func (e *testEnv) spare() string {
	return filepath.Join(e.dir, exactfs.SpareName(filepath.Base(e.claim)))
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func lockCycle(t *testing.T, e *testEnv) {
	t.Helper()
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// The claim directory released by one cycle is the one the next cycle
// takes: released by a rename to the spare name, taken by a rename back.
func TestSpareClaimIsRecycled(t *testing.T) {
	e := newEnv(t)
	lockCycle(t, e)
	ino := inode(t, e.spare())
	var taken []uint64
	defer hook.Set(hook.LockClaimTaken, func(string) { taken = append(taken, inode(t, e.claim)) })()
	lockCycle(t, e)
	if len(taken) != 2 || taken[0] != ino || taken[1] != ino {
		t.Fatalf("claims taken with inodes %v, want both %d (the spare's)", taken, ino)
	}
	if got := inode(t, e.spare()); got != ino {
		t.Fatalf("spare inode %d after the cycle, want %d", got, ino)
	}
	assertSteadyState(t, e, true)
}

// A spare's mtime is that of its last use. Taken as the claim, it must look
// new, or a contender would judge the claim (old directory, tombstone
// sidecar at least 1 s old, no kernel lock yet) crashed and remove it from
// under its taker. Without the touch in takeSpare this test fails.
func TestSpareClaimLooksNew(t *testing.T) {
	e := newEnv(t)
	lockCycle(t, e)
	old := time.Now().Add(-time.Hour)
	for _, p := range []string{e.spare(), e.sidecar} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	var contender error
	var claimIno uint64
	fired := false // not hook.Once: the contender fires the hook again if it takes the claim
	defer hook.Set(hook.LockClaimTaken, func(string) {
		if fired {
			return
		}
		fired = true
		claimIno = inode(t, e.claim)
		_, contender = TryLock(e.state, e.opts()...)
	})()
	lockCycle(t, e)
	if !errorsIsLocked(contender) {
		t.Fatalf("a contender during our claim got %v, want ErrLocked", contender)
	}
	if claimIno == 0 {
		t.Fatal("the hook did not run")
	}
	assertSteadyState(t, e, true)
}

// Things a spare must never be. Each is planted at the spare name; Lock
// and Unlock work (claims are then made with mkdir and removed with
// rmdir) and the planted thing is still there, the same inode, and
// nothing it points to is touched. A FIFO must not make anything hang.
func TestSpareForeignObjectsUntouched(t *testing.T) {
	cases := map[string]func(t *testing.T, e *testEnv, p string){
		"symlink to an empty 0700 directory": func(t *testing.T, e *testEnv, p string) {
			target := filepath.Join(t.TempDir(), "target")
			os.Mkdir(target, 0o700)
			os.Symlink(target, p)
		},
		"regular file": func(t *testing.T, e *testEnv, p string) { os.WriteFile(p, []byte("keep"), 0o600) },
		"FIFO":         func(t *testing.T, e *testEnv, p string) { syscall.Mkfifo(p, 0o600) },
		"directory 0755": func(t *testing.T, e *testEnv, p string) {
			os.Mkdir(p, 0o700)
			os.Chmod(p, 0o755)
		},
		"non-empty directory": func(t *testing.T, e *testEnv, p string) {
			os.Mkdir(p, 0o700)
			os.WriteFile(filepath.Join(p, "inside"), []byte("keep"), 0o600)
		},
	}
	for name, plant := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			p := e.spare()
			plant(t, e, p)
			before := inode(t, p)
			done := make(chan struct{})
			go func() {
				defer close(done)
				lockCycle(t, e)
				lockCycle(t, e)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("lock cycles hung")
			}
			if got := inode(t, p); got != before {
				t.Fatalf("%s: inode %d, want %d", p, got, before)
			}
			if _, err := os.Lstat(e.claim); !os.IsNotExist(err) {
				t.Fatalf("claim left: %v", err)
			}
			if name == "non-empty directory" {
				if b, err := os.ReadFile(filepath.Join(p, "inside")); err != nil || string(b) != "keep" {
					t.Fatalf("content of the planted directory: %q %v", b, err)
				}
			}
		})
	}
}

// Anyone may remove an empty spare at any time: the next claim is made
// with mkdir, and released to a new spare.
func TestSpareRemovedBetweenCycles(t *testing.T) {
	e := newEnv(t)
	lockCycle(t, e)
	if err := os.Remove(e.spare()); err != nil {
		t.Fatal(err)
	}
	lockCycle(t, e)
	if fi, err := os.Lstat(e.spare()); err != nil || !fi.IsDir() {
		t.Fatalf("no spare after the cycle: %v %v", fi, err)
	}
	assertSteadyState(t, e, true)
}

// A file written into the claim directory while we hold it is never moved
// into the spare: the claim is removed by rmdir instead, which refuses a
// non-empty directory, so the release fails loudly and the file stays.
func TestClaimWrittenIntoIsNotRecycled(t *testing.T) {
	e := newEnv(t)
	lockCycle(t, e)
	spareIno := inode(t, e.spare())
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer hook.Set(hook.LockBeforeRelease, hook.Once(func(string) {
		os.WriteFile(filepath.Join(e.claim, "foreign"), []byte("x"), 0o600)
	}))()
	if err := h.Unlock(); err == nil {
		t.Fatal("Unlock succeeded although the claim directory was not empty")
	} else {
		t.Log(err)
	}
	if b, err := os.ReadFile(filepath.Join(e.claim, "foreign")); err != nil || string(b) != "x" {
		t.Fatalf("the foreign file: %q %v", b, err)
	}
	if got := inode(t, e.claim); got != spareIno {
		t.Fatalf("claim inode %d, want %d (it must have stayed at the claim name)", got, spareIno)
	}
	if _, err := os.Lstat(e.spare()); !os.IsNotExist(err) {
		t.Fatalf("a spare exists although the only one was the claim: %v", err)
	}
}

// The sidecar's descriptor parked between a lock's two claims (park.go) is
// used only while the name still names its inode: a sidecar replaced (or
// removed) during the hold is taken afresh by name, and the old inode,
// which nobody can see any more, is never written.
func TestParkedSidecarReplacedDuringHold(t *testing.T) {
	for _, replace := range []bool{true, false} {
		e := newEnv(t)
		lockCycle(t, e)
		h, err := Lock(context.Background(), e.state, e.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		old, err := os.Open(e.sidecar)
		if err != nil {
			t.Fatal(err)
		}
		before, _ := io.ReadAll(old)
		if replace {
			tmp := e.sidecar + ".new"
			if err := os.WriteFile(tmp, before, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, e.sidecar); err != nil {
				t.Fatal(err)
			}
		} else if err := os.Remove(e.sidecar); err != nil {
			t.Fatal(err)
		}
		if err := h.Unlock(); err != nil {
			t.Fatalf("replace=%v: %v", replace, err)
		}
		after := make([]byte, 1024)
		n, _ := old.ReadAt(after, 0)
		old.Close()
		if string(after[:n]) != string(before) {
			t.Fatalf("replace=%v: the sidecar inode the name no longer names was written:\n%s\nwas\n%s", replace, after[:n], before)
		}
		assertSteadyState(t, e, true)
	}
}

// A process killed right after it renamed the spare onto the claim's name
// (before its sidecar says who it is), in the acquisition and in the
// release: the claim it leaves is reclaimed by the next caller once the
// sidecar tombstone is a second old, without waiting out the budget, and a
// spare exists again after the next cycle.
func TestKilledRightAfterTakingSpare(t *testing.T) {
	for _, in := range []string{"lock", "unlock"} {
		t.Run(in, func(t *testing.T) {
			e := newEnv(t)
			lockCycle(t, e)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := workerCmd(ctx, "killat", "STATELOCK_STATE="+e.state, "STATELOCK_CONFIG="+e.configRoot,
				"STATELOCK_KILL_HOOK="+hook.LockClaimTaken, "STATELOCK_KILL_IN="+in)
			cmd.Stderr = os.Stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("worker was not killed at the hook: %v", err)
			}
			if fi, err := os.Lstat(e.claim); err != nil || !fi.IsDir() {
				t.Fatalf("the killed worker left no claim directory: %v", err)
			}
			start := time.Now()
			h, err := Lock(context.Background(), e.state, e.opts(WithWait(10*time.Second))...)
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			if err := h.Unlock(); err != nil {
				t.Fatal(err)
			}
			t.Logf("the crashed claim was reclaimed after %v", took)
			if took > 5*time.Second {
				t.Fatalf("took %v: the crashed claim was not reclaimed promptly", took)
			}
			lockCycle(t, e)
			if fi, err := os.Lstat(e.spare()); err != nil || !fi.IsDir() {
				t.Fatalf("no spare after two cycles: %v", err)
			}
			assertSteadyState(t, e, true)
		})
	}
}
