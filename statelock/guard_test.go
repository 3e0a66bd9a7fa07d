//go:build unix

package statelock_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/statelock"
)

// The library's guards are the CLI's (issue 20, item 2), seen from a
// program that uses the public API only.

func guardEnv(t *testing.T) (dir string, opts []statelock.Option) {
	t.Helper()
	base := t.TempDir()
	dir = filepath.Join(base, "d")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir, []statelock.Option{statelock.WithConfigRoot(filepath.Join(base, "config"))}
}

func inodeOf(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Skip("no inode numbers here")
	}
	return uint64(st.Ino)
}

// A function that returns no bytes is refused: the state file keeps its
// bytes (or stays absent), the error names the file and the option, and
// the lock is free afterwards. WithAllowEmpty(true) writes the empty file.
func TestUpdateRefusesEmptyResult(t *testing.T) {
	for _, group := range []bool{true, false} {
		t.Run(fmt.Sprint("group=", group), func(t *testing.T) { testUpdateRefusesEmptyResult(t, group) })
	}
}

func testUpdateRefusesEmptyResult(t *testing.T, group bool) {
	dir, opts := guardEnv(t)
	opts = append(opts, statelock.WithGroupCommit(group))
	ctx := context.Background()
	state := filepath.Join(dir, "s.json")
	absent := filepath.Join(dir, "absent.json")
	if err := os.WriteFile(state, []byte(`{"n":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, empty := range [][]byte{nil, {}} {
		for _, f := range []string{state, absent} {
			err := statelock.Update(ctx, f, func([]byte) ([]byte, error) { return empty, nil }, opts...)
			if !errors.Is(err, statelock.ErrEmptyResult) {
				t.Fatalf("Update(%s) returning %#v: %v, want ErrEmptyResult", filepath.Base(f), empty, err)
			}
			if msg := err.Error(); !strings.Contains(msg, f) || !strings.Contains(msg, "WithAllowEmpty") || !strings.Contains(msg, "ErrNoChange") {
				t.Fatalf("the message does not name the file and the ways out: %q", msg)
			}
		}
		if got, _ := os.ReadFile(state); string(got) != `{"n":1}` {
			t.Fatalf("the state file holds %q after a refused empty result", got)
		}
		if _, err := os.Lstat(absent); !os.IsNotExist(err) {
			t.Fatalf("a refused empty result created the absent state file: %v", err)
		}
	}
	h, err := statelock.TryLock(state, opts...)
	if err != nil {
		t.Fatalf("the lock is not free after a refused empty result: %v", err)
	}
	h.Unlock()

	err = statelock.Update(ctx, state, func([]byte) ([]byte, error) { return nil, nil }, append(opts, statelock.WithAllowEmpty(true))...)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(state); err != nil || fi.Size() != 0 {
		t.Fatalf("WithAllowEmpty(true): %v %v, want an empty file", fi, err)
	}
}

// ErrNoChange, alone or wrapped, writes nothing (same inode, same bytes; an
// absent file stays absent) and Update returns nil.
func TestUpdateNoChange(t *testing.T) {
	for _, group := range []bool{true, false} {
		t.Run(fmt.Sprint("group=", group), func(t *testing.T) { testUpdateNoChange(t, group) })
	}
}

func testUpdateNoChange(t *testing.T, group bool) {
	dir, opts := guardEnv(t)
	opts = append(opts, statelock.WithGroupCommit(group))
	ctx := context.Background()
	state := filepath.Join(dir, "s.json")
	if err := os.WriteFile(state, []byte(`{"n":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ino := inodeOf(t, state)
	for _, ret := range []error{statelock.ErrNoChange, fmt.Errorf("already set: %w", statelock.ErrNoChange)} {
		var saw []byte
		err := statelock.Update(ctx, state, func(old []byte) ([]byte, error) { saw = old; return nil, ret }, opts...)
		if err != nil {
			t.Fatalf("Update returning %v: %v, want nil", ret, err)
		}
		if string(saw) != `{"n":1}` || inodeOf(t, state) != ino {
			t.Fatalf("saw %q; inode %d, want %d (nothing written)", saw, inodeOf(t, state), ino)
		}
	}
	absent := filepath.Join(dir, "absent.json")
	if err := statelock.Update(ctx, absent, func([]byte) ([]byte, error) { return nil, statelock.ErrNoChange }, opts...); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(absent); !os.IsNotExist(err) {
		t.Fatalf("ErrNoChange created the state file: %v", err)
	}
}

// A missing directory is refused by every lock call, nothing is created,
// and the error names the directory and the option; WithMakeDir(true)
// makes it, owner-only.
func TestLockRefusesMissingDirectory(t *testing.T) {
	dir, opts := guardEnv(t)
	ctx := context.Background()
	state := filepath.Join(dir, "typo", "deeper", "s.json")
	calls := map[string]func(o []statelock.Option) error{
		"Lock": func(o []statelock.Option) error {
			h, err := statelock.Lock(ctx, state, o...)
			if err == nil {
				h.Unlock()
			}
			return err
		},
		"TryLock": func(o []statelock.Option) error {
			h, err := statelock.TryLock(state, o...)
			if err == nil {
				h.Unlock()
			}
			return err
		},
		"With": func(o []statelock.Option) error {
			return statelock.With(ctx, state, func() error { return nil }, o...)
		},
		"Update": func(o []statelock.Option) error {
			return statelock.Update(ctx, state, func([]byte) ([]byte, error) { return []byte("x"), nil }, o...)
		},
		"Update without group commit": func(o []statelock.Option) error {
			return statelock.Update(ctx, state, func([]byte) ([]byte, error) { return []byte("x"), nil }, append(o, statelock.WithGroupCommit(false))...)
		},
	}
	for name, call := range calls {
		err := call(opts)
		if !errors.Is(err, statelock.ErrNoDirectory) {
			t.Fatalf("%s: %v, want ErrNoDirectory", name, err)
		}
		want := filepath.Join(dir, "typo", "deeper")
		if msg := err.Error(); !strings.Contains(msg, want) || !strings.Contains(msg, "WithMakeDir(true)") {
			t.Fatalf("%s: the message does not name the directory and the option: %q", name, msg)
		}
		if exactfs.CodeOf(err) != statelock.ReasonInitFailed {
			t.Fatalf("%s: code %s, want %s", name, exactfs.CodeOf(err), statelock.ReasonInitFailed)
		}
		if _, err := os.Lstat(filepath.Join(dir, "typo")); !os.IsNotExist(err) {
			t.Fatalf("%s made the missing directory: %v", name, err)
		}
	}
	for name, call := range calls {
		if err := call(append(opts, statelock.WithMakeDir(true))); err != nil {
			t.Fatalf("%s with WithMakeDir(true): %v", name, err)
		}
		fi, err := os.Lstat(filepath.Dir(state))
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v, want a 0700 directory", name, fi, err)
		}
		if err := os.RemoveAll(filepath.Join(dir, "typo")); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := os.ReadFile(filepath.Join(dir, "s.json")); err == nil && !bytes.Equal(got, nil) {
		t.Fatalf("unexpected state file %q", got)
	}
}
