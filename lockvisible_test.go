//go:build (linux && !exactfs_portable) || windows

package exactfs

import (
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/exactfs/exactfs/internal/hook"
)

// The range the tests lock: beyond any byte, so that on Windows, where
// locks are mandatory, nothing a reader reads is locked.
const visStart, visLen = 1 << 39, 1 << 39

// askHeld is a judge's question through g: F_OFD_GETLK on Linux; on
// Windows, which has none, taking the range's first byte for an instant.
func askHeld(g *os.File) (held, known bool) {
	if runtime.GOOS != "windows" {
		return RangeHeld(g, visStart, visLen)
	}
	ok, err := TryLockRange(g, LockExclusive, visStart, 1)
	switch {
	case err != nil:
		return false, false
	case !ok:
		return true, true
	}
	UnlockRange(g, visStart, 1)
	return false, true
}

// freshVisibility empties LockVisible's per-volume cache for the test and
// after it, and counts the times LockVisible really asks.
func freshVisibility(t *testing.T) *atomic.Int32 {
	t.Helper()
	clear := func() { lockVisibleOn.Range(func(k, _ any) bool { lockVisibleOn.Delete(k); return true }) }
	clear()
	t.Cleanup(clear)
	var asked atomic.Int32
	t.Cleanup(hook.Set(hook.LockVisibleAsked, func(string) { asked.Add(1) }))
	return &asked
}

func visibilityFile(t *testing.T) *os.File {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(t.TempDir(), "rec.lock"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.WriteString(`{"pid":1}`); err != nil {
		t.Fatal(err)
	}
	return f
}

// A lock held through f is seen from LockVisible's second open, which
// therefore is an open of its own: through a duplicate of f (one open file
// description, or one handle's locks) the question would find no other
// holder. The answer is cached for the volume: the next call asks nothing.
func TestLockVisibleSeesTheHoldersLock(t *testing.T) {
	asked := freshVisibility(t)
	f := visibilityFile(t)
	if ok, err := TryLockRange(f, LockExclusive, visStart, visLen); err != nil || !ok {
		t.Fatalf("TryLockRange = %v, %v", ok, err)
	}
	if !LockVisible(f, askHeld) {
		t.Fatal("LockVisible = false with the lock held through f")
	}
	if !LockVisible(f, func(*os.File) (bool, bool) { t.Error("asked again"); return false, false }) {
		t.Fatal("LockVisible's second answer = false, want the cached true")
	}
	if n := asked.Load(); n != 1 {
		t.Fatalf("asked %d times, want 1 (once per volume)", n)
	}
}

// Without a lock, the second open sees none: false, and false is what the
// volume keeps (a filesystem that hides locks does not start showing them).
func TestLockVisibleFalseWithoutLockAndCached(t *testing.T) {
	asked := freshVisibility(t)
	f := visibilityFile(t)
	if LockVisible(f, askHeld) {
		t.Fatal("LockVisible = true with no lock held")
	}
	if ok, err := TryLockRange(f, LockExclusive, visStart, visLen); err != nil || !ok {
		t.Fatalf("TryLockRange = %v, %v", ok, err)
	}
	if LockVisible(f, askHeld) {
		t.Fatal("LockVisible = true: the volume's false answer was not cached")
	}
	if n := asked.Load(); n != 1 {
		t.Fatalf("asked %d times, want 1", n)
	}
}

// A question that cannot answer (known false) is not visibility.
func TestLockVisibleUnknownIsFalse(t *testing.T) {
	freshVisibility(t)
	f := visibilityFile(t)
	if ok, err := TryLockRange(f, LockExclusive, visStart, visLen); err != nil || !ok {
		t.Fatalf("TryLockRange = %v, %v", ok, err)
	}
	if LockVisible(f, func(*os.File) (bool, bool) { return true, false }) {
		t.Fatal("LockVisible = true although the question could not answer")
	}
}

// The fault hook answers "hidden" without poisoning the cache: the next
// call without it asks again and finds the lock.
func TestLockVisibleHiddenHookIsNotCached(t *testing.T) {
	asked := freshVisibility(t)
	f := visibilityFile(t)
	if ok, err := TryLockRange(f, LockExclusive, visStart, visLen); err != nil || !ok {
		t.Fatalf("TryLockRange = %v, %v", ok, err)
	}
	restore := hook.Set(hook.LockVisibleHidden, func(string) {})
	if LockVisible(f, askHeld) {
		restore()
		t.Fatal("LockVisible = true under LockVisibleHidden")
	}
	restore()
	if !LockVisible(f, askHeld) {
		t.Fatal("LockVisible = false after the hook was removed")
	}
	if n := asked.Load(); n != 2 {
		t.Fatalf("asked %d times, want 2", n)
	}
}
