//go:build unix && (!linux || exactfs_portable)

package exactfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestRangeLockUnsupported: where there are no open-file-description locks
// (macOS, the BSDs, the portable build), every range-lock call says so
// rather than pretending: a lock and an unlock fail with ErrUnsupported,
// RangeHeld is "not known", RangeHolderOf and LockFD.Holder fail with
// ErrUnsupported. A process-owned POSIX lock in their place would be
// shared silently by a second open in the same process.
func TestRangeLockUnsupported(t *testing.T) {
	dirPath := t.TempDir()
	path := filepath.Join(dirPath, "rec")
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, mode := range []LockMode{LockExclusive, LockShared} {
		if ok, err := TryLockRange(f, mode, 0, 1); ok || !errors.Is(err, ErrUnsupported) {
			t.Errorf("TryLockRange(%d) = %v, %v; want ErrUnsupported", mode, ok, err)
		}
	}
	if err := UnlockRange(f, 0, 1); !errors.Is(err, ErrUnsupported) {
		t.Errorf("UnlockRange = %v; want ErrUnsupported", err)
	}
	if _, known := RangeHeld(f, 0, 0); known {
		t.Error("RangeHeld answered")
	}
	if _, err := RangeHolderOf(f, 0, 0); !errors.Is(err, ErrUnsupported) {
		t.Errorf("RangeHolderOf = %v; want ErrUnsupported", err)
	}
	d, err := OpenDir(dirPath)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	fd, _, err := d.OpenLockFD("rec")
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	if _, known := fd.Held(0, 0); known {
		t.Error("LockFD.Held answered")
	}
	if _, err := fd.Holder(0, 0); !errors.Is(err, ErrUnsupported) {
		t.Errorf("LockFD.Holder = %v; want ErrUnsupported", err)
	}
}
