//go:build unix

package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
)

func TestOpenCreatesOwnerOnlyAndVerifies(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "s")
	if _, err := Open(p); !errors.Is(err, exactfs.ErrNotFound) {
		t.Fatalf("Open of a missing directory: %v, want not_found", err)
	}
	s, err := Open(p, Create())
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if m := mode(t, p); m != 0o700 {
		t.Fatalf("created with mode %v", m)
	}
	chmod(t, p, 0o755)
	_, err = Open(p)
	wantCode(t, err, CodeModeMismatch)
	s, err = Open(p, Repair())
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if m := mode(t, p); m != 0o700 {
		t.Fatalf("repaired to mode %v", m)
	}
	os.Symlink(p, filepath.Join(root, "link"))
	_, err = Open(filepath.Join(root, "link"))
	wantCode(t, err, exactfs.CodeReparsePoint)
}

func TestStoreRoundTrip(t *testing.T) {
	s := newStore(t)
	if err := s.Mkdir("sub"); err != nil {
		t.Fatal(err)
	}
	id, err := s.Publish("sub/a.json", []byte("one"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Publish("sub/a.json", []byte("two")); !errors.Is(err, exactfs.ErrDestinationExists) {
		t.Fatalf("second publish: %v, want destination_exists", err)
	}
	data, rid, err := s.ReadExpected("sub/a.json")
	if err != nil || string(data) != "one" || !SameFile(id, rid) {
		t.Fatalf("read: %q %v %v", data, rid, err)
	}
	id2, err := s.ReplaceExpected("sub/a.json", []byte("three"), rid)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Replace("sub/b.json", []byte("b")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Replace("sub/b.json", []byte("bb")); err != nil {
		t.Fatal(err)
	}
	names, err := s.List("sub")
	if err != nil || !slices.Equal(names, []string{"a.json", "b.json"}) {
		t.Fatalf("list: %v %v", names, err)
	}
	for _, p := range []string{"sub", "sub/a.json", "sub/b.json"} {
		want := os.FileMode(0o600)
		if p == "sub" {
			want = 0o700
		}
		if m := mode(t, filepath.Join(s.Path(), p)); m != want {
			t.Fatalf("%s: mode %v, want %v", p, m, want)
		}
	}
	if err := s.RemoveExpected("sub/a.json", rid); !errors.Is(err, exactfs.ErrIdentityMismatch) {
		t.Fatalf("remove with the replaced identity: %v", err)
	}
	if err := s.RemoveExpected("sub/a.json", id2); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, s.Path()); !slices.Equal(got, []string{"sub", "sub/b.json"}) {
		t.Fatalf("left behind: %v", got)
	}
}

func TestStorePathRefusals(t *testing.T) {
	s := newStore(t)
	outside := t.TempDir()
	chmod(t, outside, 0o700)
	if err := s.Mkdir("a"); err != nil {
		t.Fatal(err)
	}
	// a/link is a symlink to a directory outside the store.
	if err := os.Symlink(outside, filepath.Join(s.Path(), "a", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "b"), []byte("outside"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := entries(t, s.Path())
	for _, c := range []struct {
		rel  string
		code exactfs.Code
	}{
		{"../x", exactfs.CodeInvalidRequest},
		{"a/../../x", exactfs.CodeInvalidRequest},
		{"/abs", exactfs.CodeInvalidRequest},
		{filepath.Join(outside, "b"), exactfs.CodeInvalidRequest},
		{"a/link/b", exactfs.CodeReparsePoint},
		{"a/link", exactfs.CodeReparsePoint},
		{"", exactfs.CodeInvalidRequest},
		{"bad\x00name", exactfs.CodeInvalidRequest},
	} {
		ops := map[string]error{}
		_, ops["publish"] = s.Publish(c.rel, []byte("x"))
		_, ops["replace"] = s.Replace(c.rel, []byte("x"))
		_, _, ops["read"] = s.ReadExpected(c.rel)
		_, ops["replace-expected"] = s.ReplaceExpected(c.rel, []byte("x"), exactfs.Identity{})
		ops["remove"] = s.RemoveExpected(c.rel, exactfs.Identity{})
		ops["mkdir"] = s.Mkdir(c.rel)
		for op, err := range ops {
			want := c.code
			if c.rel == "a/link" && (op == "publish" || op == "mkdir") {
				want = exactfs.CodeDestinationExists // the name is taken; nothing follows the link
			}
			if got := CodeOf(err); got != want {
				t.Errorf("%s(%q): %v (code %q), want %q", op, c.rel, err, got, want)
			}
		}
	}
	for _, rel := range []string{"../x", "/abs", "a/link"} {
		_, err := s.List(rel)
		if err == nil {
			t.Errorf("List(%q) succeeded", rel)
		}
	}
	if got := entries(t, s.Path()); !slices.Equal(got, before) {
		t.Fatalf("store changed: %v -> %v", before, got)
	}
	if got := entries(t, outside); !slices.Equal(got, []string{"b"}) || string(readFile(t, filepath.Join(outside, "b"))) != "outside" {
		t.Fatalf("outside changed: %v", got)
	}
}

func TestRootReplacedRefusesEverything(t *testing.T) {
	s := newStore(t)
	id, err := s.Publish("f", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	moved := s.Path() + ".moved"
	if err := os.Rename(s.Path(), moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(s.Path(), 0o700); err != nil {
		t.Fatal(err)
	}
	chmod(t, s.Path(), 0o700)
	ops := map[string]error{}
	_, ops["publish"] = s.Publish("g", []byte("x"))
	_, ops["replace"] = s.Replace("f", []byte("x"))
	_, _, ops["read"] = s.ReadExpected("f")
	_, ops["replace-expected"] = s.ReplaceExpected("f", []byte("x"), id)
	ops["remove"] = s.RemoveExpected("f", id)
	ops["mkdir"] = s.Mkdir("d")
	_, ops["list"] = s.List(".")
	_, ops["reap"] = s.Reap()
	_, ops["fence"] = s.AcquireFence(context.Background(), "f")
	for op, err := range ops {
		if !errors.Is(err, ErrRootChanged) {
			t.Errorf("%s after the root was replaced: %v, want root binding changed", op, err)
		}
	}
	if got := entries(t, s.Path()); len(got) != 0 {
		t.Fatalf("the new directory was written: %v", got)
	}
	if got := entries(t, moved); !slices.Equal(got, []string{"f"}) || string(readFile(t, filepath.Join(moved, "f"))) != "v1" {
		t.Fatalf("the old directory changed: %v", got)
	}
	// Removed altogether: the same.
	os.Remove(s.Path())
	if _, err := s.Publish("g", []byte("x")); !errors.Is(err, ErrRootChanged) {
		t.Fatalf("publish after the root was removed: %v", err)
	}
}

// A root replaced while the bytes are staged stops the write before its
// commit; one replaced right after the commit is reported as committed.
func TestRootReplacedDuringMutation(t *testing.T) {
	for _, h := range []string{hook.StoreBeforeCommit, hook.StoreAfterCommit} {
		t.Run(h, func(t *testing.T) {
			s := newStore(t)
			moved := s.Path() + ".moved"
			restore := hook.Set(h, hook.Once(func(string) {
				os.Rename(s.Path(), moved)
				os.Mkdir(s.Path(), 0o700)
			}))
			defer restore()
			_, err := s.Replace("f", []byte("x"))
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeRootChanged || e.Committed != (h == hook.StoreAfterCommit) {
				t.Fatalf("replace: %v, want root binding changed, committed=%v", err, h == hook.StoreAfterCommit)
			}
			want := []string(nil)
			if h == hook.StoreAfterCommit {
				want = []string{"f"}
			}
			if got := entries(t, moved); !slices.Equal(got, want) {
				t.Fatalf("the store's directory holds %v, want %v", got, want)
			}
			if got := entries(t, s.Path()); len(got) != 0 {
				t.Fatalf("the new directory was written: %v", got)
			}
		})
	}
}

func TestReplaceExpectedStaleIdentity(t *testing.T) {
	s := newStore(t)
	if _, err := s.Publish("f", []byte("mine")); err != nil {
		t.Fatal(err)
	}
	_, stale, err := s.ReadExpected("f")
	if err != nil {
		t.Fatal(err)
	}
	// Another writer replaces the file.
	if _, err := s.Replace("f", []byte("theirs")); err != nil {
		t.Fatal(err)
	}
	_, err = s.ReplaceExpected("f", []byte("lost update"), stale)
	if !errors.Is(err, exactfs.ErrIdentityMismatch) {
		t.Fatalf("replace with a stale identity: %v, want identity_mismatch", err)
	}
	if got := string(readFile(t, filepath.Join(s.Path(), "f"))); got != "theirs" {
		t.Fatalf("the other writer's bytes were lost: %q", got)
	}
	if err := s.RemoveExpected("f", stale); !errors.Is(err, exactfs.ErrIdentityMismatch) {
		t.Fatalf("remove with a stale identity: %v", err)
	}
	if got := entries(t, s.Path()); !slices.Equal(got, []string{"f"}) {
		t.Fatalf("residue: %v", got)
	}
}

// The store's compare-and-swap ignores ctime (chmod, ACL tools, the store's
// own repair move it) and compares mtime (a rewrite of the same bytes by
// another writer is another file).
func TestCASComparesMtimeNotCtime(t *testing.T) {
	s := newStore(t)
	p := filepath.Join(s.Path(), "f")
	if _, err := s.Publish("f", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	_, id, err := s.ReadExpected("f")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	chmod(t, p, 0o600) // ctime moves, nothing else
	_, now, _ := s.ReadExpected("f")
	if now.CtimeNs == id.CtimeNs || !SameFile(id, now) {
		t.Fatalf("chmod did not move only ctime: %v -> %v", id, now)
	}
	id2, err := s.ReplaceExpected("f", []byte("v2"), id)
	if err != nil {
		t.Fatalf("replace after a ctime-only change: %v", err)
	}
	// Same inode, same bytes, same size, another mtime.
	mt := time.Unix(0, id2.MtimeNs).Add(-time.Hour)
	if err := os.Chtimes(p, mt, mt); err != nil {
		t.Fatal(err)
	}
	_, err = s.ReplaceExpected("f", []byte("v3"), id2)
	if !errors.Is(err, exactfs.ErrIdentityMismatch) {
		t.Fatalf("replace after an mtime change: %v, want identity_mismatch", err)
	}
	if err := s.RemoveExpected("f", id2); !errors.Is(err, exactfs.ErrIdentityMismatch) {
		t.Fatalf("remove after an mtime change: %v, want identity_mismatch", err)
	}
	if got := string(readFile(t, p)); got != "v2" {
		t.Fatalf("content %q", got)
	}
}

func TestStoreRefusesFilesThatAreNotOwnerOnly(t *testing.T) {
	s := newStore(t)
	id, err := s.Publish("f", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(s.Path(), "f")
	chmod(t, p, 0o644)
	_, _, err = s.ReadExpected("f")
	wantCode(t, err, CodeModeMismatch)
	_, err = s.ReplaceExpected("f", []byte("y"), id)
	wantCode(t, err, CodeModeMismatch)
	chmod(t, s.Path(), 0o755)
	_, err = s.Publish("g", []byte("x"))
	wantCode(t, err, CodeModeMismatch)
	if _, err := os.Lstat(filepath.Join(s.Path(), "g")); !os.IsNotExist(err) {
		t.Fatal("published into a directory that is not owner-only")
	}
}

func TestFenceStolenPublishesNothing(t *testing.T) {
	s := newStore(t)
	l, err := s.AcquireFence(context.Background(), "migrate")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(s.Path(), LocksDir, ".gjc-migrate.lock"); l.Path() != want {
		t.Fatalf("fence path %s, want %s", l.Path(), want)
	}
	if _, err := s.Publish("before", []byte("x")); err != nil {
		t.Fatal(err)
	}
	// Stolen after the first check, while the bytes are staged.
	restore := hook.Set(hook.StoreBeforeCommit, hook.Once(func(string) { stealLease(t, l.Path()) }))
	_, err = s.Publish("stolen", []byte("x"))
	restore()
	var e *Error
	if !errors.Is(err, ErrLeaseLost) || !errors.As(err, &e) || e.Committed {
		t.Fatalf("publish with the lease stolen mid-way: %v, want lease lost, not committed", err)
	}
	// Every later mutation refuses up front.
	_, err = s.Publish("later", []byte("x"))
	if !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("later publish: %v", err)
	}
	if err := s.Mkdir("dir"); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("mkdir: %v", err)
	}
	if _, err := s.Replace("before", []byte("y")); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("replace: %v", err)
	}
	if got := entries(t, s.Path()); !slices.Equal(got, []string{"before", LocksDir, filepath.Join(LocksDir, ".gjc-migrate.fence"), filepath.Join(LocksDir, ".gjc-migrate.lock")}) {
		t.Fatalf("store holds %v", got)
	}
	if got := string(readFile(t, filepath.Join(s.Path(), "before"))); got != "x" {
		t.Fatalf("before = %q", got)
	}
}

// A lease lost while a replacement is staged stops it; one lost right
// after the commit is reported with the commit.
func TestFenceLostDuringReplace(t *testing.T) {
	for _, h := range []string{hook.StoreBeforeCommit, hook.StoreAfterCommit} {
		for _, op := range []string{"replace", "replace-expected"} {
			t.Run(h+"/"+op, func(t *testing.T) {
				s := newStore(t)
				l, err := s.AcquireFence(context.Background(), "f")
				if err != nil {
					t.Fatal(err)
				}
				id, err := s.Publish("x", []byte("old"))
				if err != nil {
					t.Fatal(err)
				}
				restore := hook.Set(h, hook.Once(func(string) { stealLease(t, l.Path()) }))
				defer restore()
				if op == "replace" {
					_, err = s.Replace("x", []byte("new"))
				} else {
					_, err = s.ReplaceExpected("x", []byte("new"), id)
				}
				committed := h == hook.StoreAfterCommit
				var e *Error
				if !errors.As(err, &e) || e.Code != CodeLeaseLost || e.Committed != committed {
					t.Fatalf("%s: %v, want lease lost, committed=%v", op, err, committed)
				}
				want := "old"
				if committed {
					want = "new"
				}
				if got := string(readFile(t, filepath.Join(s.Path(), "x"))); got != want {
					t.Fatalf("x = %q, want %q", got, want)
				}
				if got := entries(t, s.Path()); len(got) != 4 {
					t.Fatalf("residue: %v", got)
				}
			})
		}
	}
}

// TestReplaceExpectedRefusesFileNotOwnerOnly: a file whose mode another
// process widened is not replaced (its successor would inherit the mode):
// mode_mismatch naming the mode found, and the file is left as it was.
// It pins the Unix side of ownerOnlyRecord, whose Windows side reads the
// DACL instead (TestWindowsOwnerOnlyRecordIsTheDACL).
func TestReplaceExpectedRefusesFileNotOwnerOnly(t *testing.T) {
	s := newStore(t)
	id, err := s.Publish("f", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(s.Path(), "f")
	chmod(t, p, 0o644)
	_, err = s.ReplaceExpected("f", []byte("v2"), id)
	wantCode(t, err, CodeModeMismatch)
	if want := "the file is mode -rw-r--r--, not owner-only 0600; its successor would inherit that"; !strings.Contains(err.Error(), want) {
		t.Fatalf("ReplaceExpected: %v, want it to say %q", err, want)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "v1" || mode(t, p) != 0o644 {
		t.Fatalf("the file changed: %q, %v, mode %v", b, err, mode(t, p))
	}
}
