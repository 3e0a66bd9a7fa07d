//go:build linux && !exactfs_portable

package statelock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
)

// TestRecoverMoveAside: a locker SIGKILLed inside Dir.MoveEmptyDir, between
// the rename of the spare claim directory to the move's private name and
// the rename on to the claim's name (hook MoveDirMoved), leaves that empty
// private directory behind. Inspect lists it, Recover keeps it while it is
// young and removes it once it is RecoverResidueAge old, and keeps, with
// the reason, whatever else carries such a name: a directory that is not
// empty, another user's, a file, a symlink (its target untouched).
func TestRecoverMoveAside(t *testing.T) {
	e := newEnv(t)
	lockCycle(t, e) // the release leaves a spare for the next claim
	if _, err := os.Lstat(e.spare()); err != nil {
		t.Fatalf("no spare to move: %v", err)
	}
	runKilledAt(t, e, "killat", hook.MoveDirMoved, "STATELOCK_KILL_IN=lock")

	// The name the killed move used: the prefix statelock knows must be it.
	var left []string
	ents, err := os.ReadDir(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range ents {
		if strings.HasPrefix(de.Name(), exactfs.MovePrefix) {
			left = append(left, de.Name())
		}
	}
	if len(left) != 1 {
		t.Fatalf("the killed move left %v under %q in %s, want one directory", left, exactfs.MovePrefix, e.dir)
	}
	aside := filepath.Join(e.dir, left[0])
	if fi, err := os.Lstat(aside); err != nil || !fi.IsDir() {
		t.Fatalf("%s: %v, want a directory", aside, err)
	}

	// Young: listed, kept, not removed.
	st, err := Inspect(e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if r := findResidue(st.Residue, left[0]); r == nil || r.Kind != "movedir" || !strings.HasPrefix(r.Note, "kept: ") {
		t.Fatalf("Inspect lists %+v for %s, want kind movedir, kept while young", r, left[0])
	}
	if acts, err := Recover(e.state, false, e.opts()...); err != nil || findAction(acts, aside) != nil {
		t.Fatalf("Recover of a young move's directory: %+v, %v", acts, err)
	}
	if _, err := os.Lstat(aside); err != nil {
		t.Fatalf("a young move's directory was removed: %v", err)
	}

	// What else may carry such a name, all old enough: each is kept.
	old := time.Now().Add(-RecoverResidueAge - time.Minute)
	backdate := func(p string) {
		t.Helper()
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	full := filepath.Join(e.dir, exactfs.MovePrefix+"full")
	mkdirOld := func(p string) {
		t.Helper()
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	mkdirOld(full)
	if err := os.WriteFile(filepath.Join(full, "data"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	backdate(full)
	foreign := filepath.Join(e.dir, exactfs.MovePrefix+"foreign")
	mkdirOld(foreign)
	if err := os.Lchown(foreign, 54321, 54321); err != nil {
		t.Skip("cannot give a directory to another uid here:", err)
	}
	backdate(foreign)
	file := filepath.Join(e.dir, exactfs.MovePrefix+"file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	backdate(file)
	target := filepath.Join(t.TempDir(), "target")
	mkdirOld(target)
	backdate(target)
	link := filepath.Join(e.dir, exactfs.MovePrefix+"link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	backdate(aside)

	dry, err := Recover(e.state, true, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if a := findAction(dry, aside); a == nil || a.Kind != "remove-movedir" || a.Done {
		t.Fatalf("dry run: %+v, want remove-movedir of %s not done", dry, aside)
	}
	if _, err := os.Lstat(aside); err != nil {
		t.Fatalf("the dry run removed it: %v", err)
	}
	acts, err := Recover(e.state, false, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if a := findAction(acts, aside); a == nil || a.Kind != "remove-movedir" || !a.Done || a.Err != nil {
		t.Fatalf("Recover: %+v, want remove-movedir of %s done", acts, aside)
	}
	if _, err := os.Lstat(aside); !os.IsNotExist(err) {
		t.Fatalf("the killed move's directory survived Recover: %v", err)
	}
	for _, p := range []string{full, filepath.Join(full, "data"), foreign, file, link, target} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed (%v); only an empty directory of ours is", p, err)
		}
		if a := findAction(acts, p); a != nil {
			t.Errorf("Recover acted on %s: %+v", p, a)
		}
	}
	st, err = Inspect(e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct{ name, note string }{
		{exactfs.MovePrefix + "full", "not empty"},
		{exactfs.MovePrefix + "foreign", "owned by uid 54321"},
		{exactfs.MovePrefix + "file", "not a directory"},
		{exactfs.MovePrefix + "link", "a symlink"},
	} {
		if r := findResidue(st.Residue, want.name); r == nil || !strings.HasPrefix(r.Note, "kept: ") || !strings.Contains(r.Note, want.note) {
			t.Errorf("Inspect lists %+v for %s, want kept: ...%s...", r, want.name, want.note)
		}
	}
	lockCycle(t, e) // the lock works on
}

func findResidue(rs []Residue, name string) *Residue {
	for i := range rs {
		if rs[i].Name == name {
			return &rs[i]
		}
	}
	return nil
}

func findAction(acts []Action, path string) *Action {
	for i := range acts {
		if acts[i].Path == path {
			return &acts[i]
		}
	}
	return nil
}
