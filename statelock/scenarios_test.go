//go:build unix

package statelock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
)

// Scenarios of the reference's own suite that TESTING.md listed as still
// open (#67, #103, #105, #108, #114, #156): each is a variant of a rule
// tested elsewhere, held here to the same window or input the reference
// uses.

// #103, #105: a legacy F.lock/ whose info file is empty (a publisher paused
// or killed between creating and writing it) proves nothing about its
// writer, fresh or an hour old: kept, byte- and inode-identical.
func TestLegacyDirectoryEmptyInfoKept(t *testing.T) {
	for name, age := range map[string]time.Duration{"fresh": 0, "an hour old": time.Hour} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.legacyDir(t, []byte{}, age)
			before := treeOf(t, e.lock)
			_, err := TryLock(e.state, e.opts(probeSays(syscall.ESRCH))...)
			var le *LockError
			if !errors.As(err, &le) || le.Code != ReasonLegacyUnprovenanced || !errors.Is(err, ErrLocked) {
				t.Fatalf("TryLock over a legacy directory with an empty info: %v", err)
			}
			assertTreeSame(t, e.lock, before)
		})
	}
}

// #108: info is a symlink (dangling, or to a file that would judge dead):
// the acquire fails, and neither the link nor its target is touched.
func TestLegacyDirectorySymlinkedInfoKept(t *testing.T) {
	for _, dangling := range []bool{true, false} {
		name := "to a dead owner's info"
		if dangling {
			name = "dangling"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.legacyDir(t, nil, time.Hour)
			target := filepath.Join(t.TempDir(), "info")
			deadInfo := legacyInfoFor(4242, e.host.ID)
			if !dangling {
				if err := os.WriteFile(target, deadInfo, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(target, filepath.Join(e.lock, "info")); err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-time.Hour)
			os.Chtimes(e.lock, old, old)
			before := treeOf(t, e.lock)
			_, err := TryLock(e.state, e.opts(probeSays(syscall.ESRCH))...)
			var le *LockError
			if !errors.As(err, &le) || le.Code != ReasonLegacyUnprovenanced {
				t.Fatalf("TryLock over a legacy directory with a symlinked info: %v", err)
			}
			assertTreeSame(t, e.lock, before)
			if got, err := os.Readlink(filepath.Join(e.lock, "info")); err != nil || got != target {
				t.Fatalf("the symlink changed: %q %v", got, err)
			}
			if !dangling && string(mustRead(t, target)) != string(deadInfo) {
				t.Fatal("the symlink's target changed")
			}
		})
	}
}

// #156: after the verdict "dead", the legacy writer rewrites info in place
// (same inode, a live owner's bytes: a reused pid that only differs by its
// timestamp): the removal sees a different tree and declines; the rewritten
// directory survives.
func TestLegacyInfoRewrittenInPlaceAfterVerdict(t *testing.T) {
	e := newEnv(t)
	e.legacyDir(t, legacyInfoFor(4242, e.host.ID), time.Minute)
	info := filepath.Join(e.lock, "info")
	var successor map[string]fileState
	defer hook.Set(hook.LockAfterLegacyVerdict, hook.Once(func(string) {
		f, err := os.OpenFile(info, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Error(err)
			return
		}
		f.Write(legacyInfoFor(os.Getppid(), e.host.ID))
		f.Close()
		successor = treeOf(t, e.lock)
	}))()
	dead4242 := withProber(probe{signal: func(pid int) error {
		if pid == 4242 {
			return syscall.ESRCH
		}
		return nil
	}})
	if _, err := TryLock(e.state, e.opts(dead4242)...); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock: %v", err)
	}
	if successor == nil {
		t.Fatal("the verdict hook never ran")
	}
	assertTreeSame(t, e.lock, successor)
}

// #114: the protected work deletes F.lock while the lock is held. The
// release fails loudly (lock_release_failed, naming the path), recreates
// nothing at the name, and the next Lock works.
func TestLockFileDeletedWhileHeld(t *testing.T) {
	e := newEnv(t)
	h, err := TryLock(e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(e.lock); err != nil {
		t.Fatal(err)
	}
	err = h.Unlock()
	var le *LockError
	if !errors.As(err, &le) || le.Code != ReasonReleaseFailed {
		t.Fatalf("Unlock after F.lock was deleted: %v", err)
	}
	t.Log(err)
	if _, err := os.Lstat(e.lock); !os.IsNotExist(err) {
		t.Fatalf("the release recreated F.lock: %v", err)
	}
	h, err = TryLock(e.state, e.opts()...)
	if err != nil {
		t.Fatalf("the next Lock: %v", err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// #67: every reclaim of a crashed claim is followed at once by another dead
// claim (a crash loop, or an adversary). The waiter neither livelocks nor
// fails another way: it keeps reclaiming within its budget and then
// returns transition_claim_timeout, naming the claim, close to the budget.
func TestDeadClaimRecreatedAfterEveryReclaim(t *testing.T) {
	e := newEnv(t)
	dead := (&Record{Pid: 4242, StartTime: "1", Token: "t", HostID: e.host.ID}).Encode()
	plant := func() {
		if err := os.Mkdir(e.claim, 0o700); err != nil {
			t.Error(err)
			return
		}
		if err := os.WriteFile(e.sidecar, dead, 0o600); err != nil {
			t.Error(err)
		}
		old := time.Now().Add(-5 * time.Second)
		os.Chtimes(e.sidecar, old, old)
		os.Chtimes(e.claim, old, old)
	}
	plant()
	reclaims := 0
	defer hook.Set(hook.TreeDetached, func(p string) {
		if p == e.claim {
			reclaims++
			plant()
		}
	})()
	const budget = 1500 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	start := time.Now()
	_, err := Lock(ctx, e.state, e.opts(probeSays(syscall.ESRCH))...)
	elapsed := time.Since(start)
	var le *LockError
	if !errors.As(err, &le) || le.Code != ReasonTransitionClaimTimeout || !errors.Is(err, ErrLocked) {
		t.Fatalf("Lock against a claim re-created after every reclaim: %v", err)
	}
	t.Logf("%d reclaims in %v: %v", reclaims, elapsed, err)
	if reclaims < 2 {
		t.Fatalf("only %d reclaims: the waiter stopped reclaiming", reclaims)
	}
	// Not a timing assertion on the protocol: a waiter that ignored its
	// budget would run until the test binary's timeout.
	if elapsed > budget+10*time.Second {
		t.Fatalf("Lock returned %v after a %v budget", elapsed, budget)
	}
}
