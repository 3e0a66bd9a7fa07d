//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/exactfs/exactfs/internal/testfs"
)

// TestUpdateRefusesUnsafeStateFileBeforeLocking: update over a STATEFILE
// that is a FIFO, a symlink or a directory exits 77 without CMD running
// and leaves the directory exactly as it was. On the code before the
// pre-check the refusal came only after the lock was taken, and
// STATEFILE.lock, its owner file and a spare directory stayed behind (as
// /dev/zero.lock did in /dev for "exactfs update /dev/zero") under a
// message saying nothing was changed.
func TestUpdateRefusesUnsafeStateFileBeforeLocking(t *testing.T) {
	for _, kind := range []string{"fifo", "symlink", "directory"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			at := filepath.Join(dir, "s")
			switch kind {
			case "fifo":
				if err := syscall.Mkfifo(at, 0o600); err != nil {
					t.Fatal(err)
				}
			case "symlink":
				if err := os.Symlink(filepath.Join(t.TempDir(), "target"), at); err != nil {
					t.Fatal(err)
				}
			case "directory":
				if err := os.Mkdir(at, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			before := testfs.Tree(t, dir)
			r := runIn(t, dir, quick, "", "update", "s", "--", "sh", "-c", "touch ran; echo new")
			expectCode(t, r, exitUnsafe, "update over a "+kind)
			if !strings.Contains(r.stderr, "CMD was not run") {
				t.Errorf("the refusal does not say CMD was not run:\n%s", r.stderr)
			}
			if after := testfs.Tree(t, dir); strings.Join(after, "\n") != strings.Join(before, "\n") {
				t.Fatalf("update over a %s changed the directory:\nbefore %q\nafter  %q\n%s", kind, before, after, r.stderr)
			}
		})
	}
}

// TestStatusOfUnsafeRecordSaysItsCodeOnce: status over a FIFO at
// STATEFILE.lock exits 77 and its error names the code once (it ended
// "(not_regular_file) (not_regular_file)" before: the library's detail
// carries the code, and the error added it again).
func TestStatusOfUnsafeRecordSaysItsCodeOnce(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "s.lock"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"status", "s"}, {"recover", "s"}} {
		r := runIn(t, dir, quick, "", args...)
		expectCode(t, r, exitUnsafe, strings.Join(args, " ")+" over a FIFO record")
		if n := strings.Count(r.stderr, "(not_regular_file)"); n != 1 {
			t.Errorf("%s: the error names not_regular_file %d times, want once:\n%s", strings.Join(args, " "), n, r.stderr)
		}
	}
}
