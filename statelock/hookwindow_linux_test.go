//go:build linux

package statelock

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
)

// only4242Dead is a prober under which pid 4242 is gone and every other pid
// is alive.
func only4242Dead() Option {
	return withProber(probe{signal: func(pid int) error {
		if pid == 4242 {
			return syscall.ESRCH
		}
		return nil
	}})
}

// A legacy writer adds a file to the judged legacy directory just before
// its exact removal (the reference's scenario 52, at the hook point no
// test used): the directory and the new file survive, byte- and
// inode-identical, and the lock is not taken.
func TestLegacyDirectoryGrowsBeforeRemoval(t *testing.T) {
	e := newEnv(t)
	e.legacyDir(t, legacyInfoFor(4242, e.host.ID), time.Minute)
	var successor map[string]fileState
	fired := false
	defer hook.Set(hook.LockBeforeLegacyRemoval, hook.Once(func(string) {
		fired = true
		if err := os.WriteFile(filepath.Join(e.lock, "payload"), []byte("a successor's data"), 0o600); err != nil {
			t.Error(err)
		}
		successor = treeOf(t, e.lock)
	}))()
	h, err := TryLock(e.state, e.opts(only4242Dead())...)
	if !fired {
		t.Fatalf("the legacy removal was never reached: %v", err)
	}
	if err == nil {
		h.Unlock()
		t.Fatal("TryLock took the lock over a legacy directory that gained a file")
	}
	assertTreeSame(t, e.lock, successor)
}

// A new taker replaces a crashed claim after the verdict on it (the
// reference's scenario 30, at the hook point no test used): the live
// claim, directory or superseded regular file, survives identical and the
// contender does not get the lock.
func TestClaimReplacedAfterInspection(t *testing.T) {
	live := func(e *testEnv) []byte {
		return (&Record{Pid: int64(os.Getppid()), StartTime: "unknown", Token: exactfs.NewUUID(), HostID: e.host.ID}).Encode()
	}
	t.Run("claim directory", func(t *testing.T) {
		e := newEnv(t)
		plantCrashedClaim(t, e, (&Record{Pid: 4242, StartTime: "1", Token: exactfs.NewUUID(), HostID: e.host.ID}).Encode())
		var dir, side fileState
		fired := false
		defer hook.Set(hook.LockAfterClaimInspection, hook.Once(func(string) {
			fired = true
			mustOK(t, os.Remove(e.claim))
			mustOK(t, os.Mkdir(e.claim, 0o700))
			tmp := e.sidecar + ".new"
			mustOK(t, os.WriteFile(tmp, live(e), 0o600))
			mustOK(t, os.Rename(tmp, e.sidecar))
			fi, err := os.Lstat(e.claim)
			mustOK(t, err)
			dir = fileState{ino: fi.Sys().(*syscall.Stat_t).Ino}
			side = stateOf(t, e.sidecar)
		}))()
		h, err := TryLock(e.state, e.opts(only4242Dead())...)
		if !fired {
			t.Fatalf("the claim's verdict was never reached: %v", err)
		}
		if err == nil {
			h.Unlock()
			t.Fatal("TryLock took the lock while a live claim was held")
		}
		if !errors.Is(err, ErrLocked) {
			t.Fatalf("TryLock: %v, want ErrLocked", err)
		}
		fi, serr := os.Lstat(e.claim)
		if serr != nil || !fi.IsDir() || fi.Sys().(*syscall.Stat_t).Ino != dir.ino {
			t.Fatalf("the live claim directory did not survive: %v %v", fi, serr)
		}
		side.assertSame(t, e.sidecar)
	})
	t.Run("superseded regular file", func(t *testing.T) {
		e := newEnv(t)
		mustOK(t, os.WriteFile(e.claim, (&Record{Pid: 4242, StartTime: "1", Token: "t", HostID: e.host.ID}).Encode(), 0o600))
		var successor fileState
		fired := false
		defer hook.Set(hook.LockAfterClaimInspection, hook.Once(func(string) {
			fired = true
			tmp := e.claim + ".new"
			mustOK(t, os.WriteFile(tmp, live(e), 0o600))
			mustOK(t, os.Rename(tmp, e.claim))
			successor = stateOf(t, e.claim)
		}))()
		h, err := TryLock(e.state, e.opts(only4242Dead())...)
		if !fired {
			t.Fatalf("the claim's verdict was never reached: %v", err)
		}
		if err == nil {
			h.Unlock()
			t.Fatal("TryLock took the lock while a live regular-file claim was there")
		}
		successor.assertSame(t, e.claim)
	})
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
