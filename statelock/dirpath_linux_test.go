//go:build linux && !exactfs_portable

package statelock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
)

// Issue 25: the directory of the state file is opened by its path on every
// Update, also when this process keeps the record from its last one
// (sticky.go): the path is proved to name the directory each time, with
// no symlink in any component. These tests change what the path names
// between two Updates whose record is kept, and require the second Update
// to act on what the path names now, or refuse as a first Update would.

func countUpdate(t *testing.T, e *testEnv) error {
	t.Helper()
	return Update(context.Background(), e.state, func(old []byte) ([]byte, error) {
		n, _ := strconv.Atoi(string(old))
		return []byte(strconv.Itoa(n + 1)), nil
	}, e.opts()...)
}

// keptTwice runs two Updates and requires the record to have been kept
// after them (the sticky path is the one under test).
func keptTwice(t *testing.T, e *testEnv) {
	t.Helper()
	var kept atomic.Int32
	t.Cleanup(hook.Set(hook.LockStickyKept, func(string) { kept.Add(1) }))
	for range 2 {
		if err := countUpdate(t, e); err != nil {
			t.Fatal(err)
		}
	}
	if kept.Load() == 0 {
		t.Fatal("no record was kept: the test would not exercise the sticky path")
	}
}

func TestUpdateActsOnDirectoryNowAtPath(t *testing.T) {
	e := newEnv(t)
	longSticky(t, e)
	keptTwice(t, e)
	// The directory is renamed away and another made at its path.
	old := e.dir + ".old"
	if err := os.Rename(e.dir, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(e.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := countUpdate(t, e); err != nil {
		t.Fatal(err)
	}
	if got := string(mustRead(t, e.state)); got != "1" {
		t.Fatalf("the state file at the path holds %q, want 1: the Update did not act on the directory the path names now", got)
	}
	if got := string(mustRead(t, filepath.Join(old, "state.json"))); got != "2" {
		t.Fatalf("the renamed directory's state file holds %q, want 2 (untouched)", got)
	}
}

func TestUpdateRefusesSymlinkedParentIntroducedBetweenCalls(t *testing.T) {
	e := newEnv(t)
	longSticky(t, e)
	keptTwice(t, e)
	// The directory moves and a symlink to it takes its path: the same
	// directory, reached through a symlink, which a first Update refuses.
	moved := e.dir + ".real"
	if err := os.Rename(e.dir, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(moved), e.dir); err != nil {
		t.Fatal(err)
	}
	err := countUpdate(t, e)
	if !refusedAsSymlink(err) {
		t.Fatalf("Update through a symlinked directory: %v, want reparse_point", err)
	}
	if got := string(mustRead(t, filepath.Join(moved, "state.json"))); got != "2" {
		t.Fatalf("the state file holds %q, want 2 (untouched)", got)
	}
	// A symlink higher up is refused the same way.
	if err := os.Remove(e.dir); err != nil {
		t.Fatal(err)
	}
	parent := filepath.Dir(e.dir)
	up := filepath.Join(parent, "up")
	if err := os.Mkdir(up, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(moved, filepath.Join(up, filepath.Base(e.dir))); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("up", filepath.Join(parent, "link")); err != nil {
		t.Fatal(err)
	}
	via := *e
	via.state = filepath.Join(parent, "link", filepath.Base(e.dir), "state.json")
	if err := countUpdate(t, &via); !refusedAsSymlink(err) {
		t.Fatalf("Update through a symlinked ancestor: %v, want reparse_point", err)
	}
}

// refusedAsSymlink reports whether err is the lock's init failure caused
// by a reparse_point refusal (the outcome is the lock's code; the cause
// is found below it, as errors.As finds it).
func refusedAsSymlink(err error) bool {
	var le *LockError
	if !errors.As(err, &le) || le.Code != ReasonInitFailed {
		return false
	}
	var e *exactfs.Error
	return errors.As(le.Err, &e) && exactfs.CodeOf(e) == exactfs.CodeReparsePoint
}
