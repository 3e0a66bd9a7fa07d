package exactfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestRangeLockWindows: on Windows a range lock is LockFileEx on the same
// range. Two handles of one process conflict as two open file
// descriptions do on Linux, shared locks coexist and exclude an exclusive
// one, UnlockRange frees exactly the range it names, and closing a handle
// drops its locks. Windows cannot say who holds a range without taking
// it: RangeHeld is "not known" and RangeHolderOf unsupported.
func TestRangeLockWindows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec")
	if err := os.WriteFile(path, []byte(`{"pid":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	lock := func(f *os.File, mode LockMode, start, length int64, want bool) {
		t.Helper()
		ok, err := TryLockRange(f, mode, start, length)
		if err != nil || ok != want {
			t.Fatalf("TryLockRange(%d, [%d, +%d)) = %v, %v; want %v", mode, start, length, ok, err, want)
		}
	}
	const slot = 1<<39 + 7
	a, b, c := open(), open(), open()
	lock(a, LockShared, slot, 1, true)
	lock(b, LockShared, slot, 1, true)
	lock(c, LockExclusive, slot, 1, false)
	lock(c, LockExclusive, slot+1, 1, true)
	if err := UnlockRange(a, slot, 1); err != nil {
		t.Fatal(err)
	}
	lock(c, LockExclusive, slot, 1, false) // b's is still there
	b.Close()
	lock(c, LockExclusive, slot, 1, true)

	if _, known := RangeHeld(a, slot, 1); known {
		t.Error("RangeHeld answered on Windows")
	}
	if _, err := RangeHolderOf(a, slot, 1); !errors.Is(err, ErrUnsupported) {
		t.Errorf("RangeHolderOf = %v; want ErrUnsupported", err)
	}
}
