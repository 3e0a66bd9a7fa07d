package statelock

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
)

// Lock with WithMakeDir(true) makes a missing directory of the state file,
// owner-only, as the reference does, and never through a symlink: a missing directory beneath
// a symlinked component is refused before anything is made, at the link's
// target or anywhere else, also when the symlink is planted after the
// lock call found the directory missing (os.MkdirAll made it at the
// link's target then).
func TestLockMakesMissingDirectoryWithoutFollowingSymlinks(t *testing.T) {
	e := newEnv(t)
	opts := append(e.opts(), WithMakeDir(true)) // the directory is made only when asked (guard_test.go)
	state := filepath.Join(e.dir, "new", "deeper", "state.json")
	h, err := Lock(context.Background(), state, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(e.dir, "new"), filepath.Dir(state)} {
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() || fi.Mode().Perm() != dirPerm {
			t.Fatalf("%s: %v %v, want a directory of mode %v", d, fi, err, dirPerm)
		}
	}

	if !symlinksHere(t) {
		return
	}
	elsewhere := filepath.Join(e.dir, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(e.dir, "link")); err != nil {
		t.Fatal(err)
	}
	_, err = Lock(context.Background(), filepath.Join(e.dir, "link", "sub", "state.json"), opts...)
	if err == nil {
		t.Fatal("Lock through a symlinked directory succeeded")
	}
	if !errorIsCode(err, ReasonInitFailed) {
		t.Fatalf("got %v, want %s", err, ReasonInitFailed)
	}
	if names, _ := os.ReadDir(elsewhere); len(names) != 0 {
		t.Fatalf("Lock made %v at the symlink's target", names)
	}

	// The race: the directory is missing when the lock call looks, and a
	// symlink to elsewhere takes its parent's place before it is made.
	restore := hook.Set(hook.LockDirMissing, func(string) {
		if err := os.Symlink(elsewhere, filepath.Join(e.dir, "late")); err != nil {
			t.Error(err)
		}
	})
	defer restore()
	_, err = Lock(context.Background(), filepath.Join(e.dir, "late", "sub", "state.json"), opts...)
	if err == nil {
		t.Fatal("Lock through a symlink planted in the race succeeded")
	}
	if names, _ := os.ReadDir(elsewhere); len(names) != 0 {
		t.Fatalf("Lock made %v at the target of a symlink planted in the race", names)
	}
}

func errorIsCode(err error, c exactfs.Code) bool { return exactfs.CodeOf(err) == c }
