package statelock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
)

func init() { winChildren["guard"] = childGuard }

// childGuard takes the reclaim guard of STATELOCK_STATE's claim directory,
// writes STATELOCK_READY and waits to be killed.
func childGuard() error {
	l, err := openLocker(os.Getenv("STATELOCK_STATE"), []Option{WithConfigRoot(os.Getenv("STATELOCK_CONFIG"))}, false)
	if err != nil {
		return err
	}
	fi, err := l.dir.Lstat(l.claim)
	if err != nil {
		return err
	}
	release, held, err := l.guardTree(l.claim, fi.Sys().(exactfs.Identity))
	if err != nil {
		return err
	}
	if !held {
		return errors.New("the guard is held elsewhere")
	}
	p := os.Getenv("STATELOCK_READY")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		return err
	}
	time.Sleep(time.Hour)
	release() // (never reached: the test kills this process)
	return nil
}

// TestWindowsReclaimGuardExcludes: the reclaim guard of a crashed claim
// (reclaim_windows.go) admits one reclaimer at a time, across handles of
// one process and across processes; a reclaimer killed while it holds it
// (TerminateProcess) leaves it free; and it is not held for a directory
// that is no longer the one judged. Fails on the code before it, where
// Windows had no guard (every call "held" it).
func TestWindowsReclaimGuardExcludes(t *testing.T) {
	e := newEnv(t)
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Unlock(); err != nil { // the sidecar is now a tombstone
		t.Fatal(err)
	}
	if err := os.Mkdir(e.claim, 0o700); err != nil { // a crashed claim
		t.Fatal(err)
	}
	fi, err := exactfs.Lstat(e.claim)
	if err != nil {
		t.Fatal(err)
	}
	want := fi.Sys().(exactfs.Identity)
	locker := func() *locker {
		l, err := openLocker(e.state, e.opts(), false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.close)
		return l
	}
	l1, l2 := locker(), locker()
	release, held, err := l1.guardTree(l1.claim, want)
	if err != nil || !held {
		t.Fatalf("the first reclaimer's guard: held %v, %v", held, err)
	}
	if _, held, err := l2.guardTree(l2.claim, want); err != nil || held {
		t.Fatalf("a second reclaimer's guard while the first holds it: held %v, %v; want not held", held, err)
	}
	if _, held, err := l2.guardTree(l2.claim+exactfs.RemovingSuffix, want); err != nil || held {
		t.Fatalf("the guard of the detached name while the first holds it: held %v, %v; want not held", held, err)
	}
	release()
	if _, held, err := l2.guardTree(l2.claim, exactfs.Identity{Dev: want.Dev, Ino: want.Ino + 1}); err != nil || held {
		t.Fatalf("the guard of another directory than the one judged: held %v, %v; want not held", held, err)
	}
	release2, held, err := l2.guardTree(l2.claim, want)
	if err != nil || !held {
		t.Fatalf("the guard once the first let go: held %v, %v", held, err)
	}
	release2()

	ready := filepath.Join(e.dir, "..", "guard-ready")
	child := startWinChild(t, "guard", ready, "STATELOCK_STATE="+e.state, "STATELOCK_CONFIG="+e.configRoot)
	if _, held, err := l1.guardTree(l1.claim, want); err != nil || held {
		t.Fatalf("the guard while a child process holds it: held %v, %v; want not held", held, err)
	}
	child.kill()
	release, held, err = l1.guardTree(l1.claim, want)
	if err != nil || !held {
		t.Fatalf("the guard after its holder was killed: held %v, %v", held, err)
	}
	release()
	if err := os.Remove(e.claim); err != nil {
		t.Fatal(err)
	}
}
