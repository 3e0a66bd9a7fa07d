//go:build unix

package statelock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A host identity that cannot be established fails the lock call before
// anything is created (SPEC §3: not F.lock, not the claim, not the state
// file's directory), and the failure is not remembered: once the cause is
// gone, the next call succeeds (the reference's scenarios 48 and 49).
func TestHostIdentityFailureCreatesNothingAndIsNotCached(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "config")
	// A regular file where the config root must be: the secret cannot be
	// made, so the host id cannot be derived.
	if err := os.WriteFile(root, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "s.json")
	missing := filepath.Join(base, "missing", "s.json")
	for _, f := range []string{state, missing} {
		_, err := Lock(context.Background(), f, WithConfigRoot(root))
		if err == nil {
			t.Fatalf("Lock(%s) with an unusable config root succeeded", f)
		}
		var le *LockError
		if !errors.As(err, &le) || le.Code != ReasonInitFailed {
			t.Fatalf("Lock(%s): %v, want %s", f, err, ReasonInitFailed)
		}
		err = Update(context.Background(), f, func([]byte) ([]byte, error) { return []byte("x"), nil }, WithConfigRoot(root))
		if err == nil {
			t.Fatalf("Update(%s) with an unusable config root succeeded", f)
		}
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Fatalf("a failed host identity left %q in %s", names, dir)
	}
	if _, err := os.Lstat(filepath.Dir(missing)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed host identity made the state file's directory: %v", err)
	}

	// The cause goes away: the same config root now works, at once.
	if err := os.Remove(root); err != nil {
		t.Fatal(err)
	}
	h, err := Lock(context.Background(), state, WithConfigRoot(root))
	if err != nil {
		t.Fatalf("Lock after the config root was mended: %v (a failure was cached?)", err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	if names := dirNames(t, dir); !slices.Contains(names, "s.json.lock") {
		t.Fatalf("after a lock cycle %s holds %q", dir, names)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
