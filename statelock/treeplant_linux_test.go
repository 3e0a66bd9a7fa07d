package statelock

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
)

// A file of 16 GiB (sparse: free to make) planted in a stale legacy F.lock/
// directory right after the judge's verdict is never read: the removal's
// look again (exactfs.Dir.RecaptureTree) refuses it by name, unread, and
// the lock is not taken through it. On the code before, the look again
// (CaptureTree) hashed all of it once (hook.CaptureRead saw it).
func TestLegacyPlantAfterVerdictIsNotRead(t *testing.T) {
	e := newEnv(t)
	e.legacyDir(t, legacyInfoFor(4242, e.host.ID), time.Minute)
	big := filepath.Join(e.lock, "big")
	defer hook.Set(hook.LockAfterLegacyVerdict, hook.Once(func(string) {
		f, err := os.OpenFile(big, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			err = f.Truncate(16 << 30)
			f.Close()
		}
		if err != nil {
			t.Error(err)
		}
	}))()
	var mu sync.Mutex
	var read []string
	defer hook.Set(hook.CaptureRead, func(p string) { mu.Lock(); read = append(read, p); mu.Unlock() })()
	dead4242 := withProber(probe{signal: func(pid int) error {
		if pid == 4242 {
			return syscall.ESRCH
		}
		return nil
	}})
	h, err := TryLock(e.state, e.opts(dead4242)...)
	if err == nil {
		h.Unlock()
		t.Fatal("took the lock through a legacy directory with a planted file")
	}
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range read {
		if p == big || filepath.Base(p) == "big" {
			t.Fatalf("the planted file was read (reads: %q)", read)
		}
	}
	if st, err := os.Stat(big); err != nil || st.Size() != 16<<30 {
		t.Fatalf("the planted file: %v, %v", st, err)
	}
}
