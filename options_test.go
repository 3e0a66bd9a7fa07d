//go:build unix

package exactfs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/exactfs/exactfs/internal/hook"
)

// BeforeCommit runs after staging, before the commit; its error calls the
// write off with nothing changed and no residue.
func TestBeforeCommit(t *testing.T) {
	errFence := errors.New("lease lost")
	ops := map[string]func(p string, want Identity, f func() error) error{
		"Publish link fallback": func(p string, _ Identity, f func() error) error {
			os.Remove(p)
			defer setHook(hook.ForceLinkFallback, func(string) {})()
			_, err := Publish(p, []byte("new"), 0o600, BeforeCommit(f))
			return err
		},
		"Publish": func(p string, _ Identity, f func() error) error {
			os.Remove(p)
			_, err := Publish(p, []byte("new"), 0o600, BeforeCommit(f))
			return err
		},
		"Dir.WriteFile": func(p string, _ Identity, f func() error) error {
			d, err := OpenDir(filepath.Dir(p))
			if err != nil {
				return err
			}
			defer d.Close()
			_, err = d.WriteFile("f", []byte("new"), 0o600, BeforeCommit(f))
			return err
		},
		"ReplaceExpected": func(p string, want Identity, f func() error) error {
			_, err := ReplaceExpected(p, []byte("new"), want, BeforeCommit(f))
			return err
		},
		"WriteFile": func(p string, _ Identity, f func() error) error {
			_, err := WriteFile(p, []byte("new"), 0o600, BeforeCommit(f))
			return err
		},
		"Dir.ReplaceExpected": func(p string, want Identity, f func() error) error {
			d, err := OpenDir(filepath.Dir(p))
			if err != nil {
				return err
			}
			defer d.Close()
			_, err = d.ReplaceExpected("f", []byte("new"), want, BeforeCommit(f))
			return err
		},
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f")
			putFile(t, p, []byte("old"))
			_, id := mustCapture(t, p)
			var staged []string
			refuse := func() error {
				staged = listing(t, dir)
				return errFence
			}
			before := snapshotDir(t, dir)
			if strings.HasPrefix(name, "Publish") {
				before = ""
			}
			err := op(p, id, refuse)
			if !errors.Is(err, errFence) {
				t.Fatalf("got %v, want the callback's error", err)
			}
			wantCode(t, err, CodeInterrupted)
			if len(staged) == 0 || !slices.ContainsFunc(staged, func(n string) bool { _, ok := StagingTarget(n); return ok }) {
				t.Fatalf("the callback ran before the file was staged: %q", staged)
			}
			if before != "" {
				wantUnchanged(t, dir, before)
			} else {
				wantListing(t, dir)
			}
			calls := 0
			if err := op(p, id, func() error { calls++; return nil }); err != nil || calls != 1 {
				t.Fatalf("with a callback that agrees: %v, %d calls", err, calls)
			}
			wantFile(t, p, []byte("new"), 0)
			wantListing(t, dir, "f")
		})
	}
}

func TestDirFdAndFile(t *testing.T) {
	dir := t.TempDir()
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	dev, ino := d.Inode()
	var st syscall.Stat_t
	if err := syscall.Fstat(d.fd, &st); err != nil || st.Ino != ino || uint64(st.Dev) != dev {
		t.Fatalf("Fd: %v %+v", err, st)
	}
	f, err := d.File()
	if err != nil {
		t.Fatal(err)
	}
	if f.Fd() == uintptr(d.fd) {
		t.Fatal("File returned d's own descriptor")
	}
	fi, err := f.Stat()
	if err != nil || fi.Sys().(*syscall.Stat_t).Ino != ino {
		t.Fatalf("File: %v", err)
	}
	f.Close()
	// d still works after the duplicate is closed.
	if _, err := d.Publish("x", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
}
