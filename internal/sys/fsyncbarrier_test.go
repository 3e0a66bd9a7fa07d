//go:build unix

package sys

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// FsyncBarrier accepts a regular file and a directory and reports a bad
// descriptor as the errno (on a Mac: F_BARRIERFSYNC, or its promotion).
func TestFsyncBarrier(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, x := range []*os.File{f, d} {
		if err := FsyncBarrier(int(x.Fd())); err != nil {
			t.Fatalf("%s: %v", x.Name(), err)
		}
	}
	if err := FsyncBarrier(-1); err != syscall.EBADF {
		t.Fatalf("fd -1: %v, want EBADF", err)
	}
}
