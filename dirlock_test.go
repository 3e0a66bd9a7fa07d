//go:build unix

package exactfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Two Dirs on one directory exclude each other with TryLock, in one
// process; Close releases the lock; a closed Dir refuses.
func TestDirTryLock(t *testing.T) {
	dir := t.TempDir()
	a, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if ok, err := a.TryLock(); !ok || err != nil {
		t.Fatalf("first lock: %v %v", ok, err)
	}
	if ok, err := b.TryLock(); ok || err != nil {
		t.Fatalf("second open locked a held directory: %v %v", ok, err)
	}
	a.Close()
	if ok, err := b.TryLock(); !ok || err != nil {
		t.Fatalf("lock after the holder closed: %v %v", ok, err)
	}
	if _, err := a.TryLock(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("TryLock on a closed Dir: %v, want os.ErrClosed", err)
	}
}

// StatFile is the capture's identity without the digest.
func TestStatFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, want, err := CaptureFile(f)
	if err != nil {
		t.Fatal(err)
	}
	got, err := StatFile(f)
	if err != nil {
		t.Fatal(err)
	}
	want.SHA256 = [32]byte{}
	if got != want {
		t.Fatalf("StatFile = %+v, want %+v", got, want)
	}
}
