//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const quick = 10 * time.Second

func TestUsageErrorsExit64(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{},
		{"no-such-command"},
		{"stat"},
		{"stat", "a", "b"},
		{"stat", "--bogus", "a"},
		{"rm", "a"},
		{"rm", "--expect", "not-an-id", "a"},
		{"write", "--no-replace", "--expect", "v1:0:0:0:0:0:0:0:00", "a"},
		{"write", "--mode", "999", "a"},
		{"write"},
		{"doctor", "a", "b"},
		{"version", "extra"},
		{"help", "no-such-command"},
	} {
		r := runIn(t, dir, quick, "", args...)
		expectCode(t, r, exitUsage, "exactfs "+strings.Join(args, " "))
		if r.stderr == "" {
			t.Errorf("exactfs %s: exit 64 without a message on stderr", strings.Join(args, " "))
		}
	}
}

func TestHelpExitsZero(t *testing.T) {
	dir := t.TempDir()
	r := runIn(t, dir, quick, "", "help")
	expectCode(t, r, 0, "help")
	for _, want := range []string{"stat", "rm", "write", "doctor", "version", "77"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help does not mention %q:\n%s", want, r.stdout)
		}
	}
	for name := range commands {
		r := runIn(t, dir, quick, "", name, "-h")
		expectCode(t, r, 0, name+" -h")
		if !strings.HasPrefix(r.stdout, "usage: exactfs "+name) {
			t.Errorf("%s -h: %s", name, r.stdout)
		}
	}
	r = runIn(t, dir, quick, "", "version")
	expectCode(t, r, 0, "version")
	if !strings.HasPrefix(r.stdout, "exactfs ") {
		t.Errorf("version: %q", r.stdout)
	}
}

func TestWriteStatRmRoundTrip(t *testing.T) {
	dir := t.TempDir()
	r := runIn(t, dir, quick, `{"n":1}`, "write", "--no-replace", "state.json")
	expectCode(t, r, 0, "write --no-replace")
	created := strings.TrimSpace(r.stdout)
	fi, err := os.Stat(filepath.Join(dir, "state.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("new file: %v, mode %v; want 0600", err, fi.Mode())
	}

	r = runIn(t, dir, quick, "", "stat", "--json", "state.json")
	expectCode(t, r, 0, "stat --json")
	var st statJSON
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("stat --json output is not the documented object: %v\n%s", err, r.stdout)
	}
	if st.Path != "state.json" || st.Kind != "file" || st.Size != 7 || st.Mode != "0600" || len(st.SHA256) != 64 || st.ID != created {
		t.Fatalf("stat --json = %+v; write printed %s", st, created)
	}

	// Publish never replaces.
	r = runIn(t, dir, quick, "other", "write", "--no-replace", "state.json")
	expectCode(t, r, exitMismatch, "write --no-replace over an existing file")
	if got := mustRead(t, filepath.Join(dir, "state.json")); got != `{"n":1}` {
		t.Fatalf("write --no-replace changed the file to %q", got)
	}

	// Compare-and-swap with the current ID replaces; with the old ID refuses.
	r = runIn(t, dir, quick, `{"n":2}`, "write", "--expect", st.ID, "state.json")
	expectCode(t, r, 0, "write --expect current")
	second := strings.TrimSpace(r.stdout)
	r = runIn(t, dir, quick, `{"n":3}`, "write", "--expect", st.ID, "state.json")
	expectCode(t, r, exitMismatch, "write --expect stale")
	if got := mustRead(t, filepath.Join(dir, "state.json")); got != `{"n":2}` {
		t.Fatalf("a stale write --expect changed the file to %q", got)
	}

	// rm with a stale ID keeps the file; with the current ID removes it.
	r = runIn(t, dir, quick, "", "rm", "--expect", st.ID, "state.json")
	expectCode(t, r, exitMismatch, "rm --expect stale")
	if !strings.Contains(r.stderr, "identity_mismatch") {
		t.Errorf("rm --expect stale: stderr does not say what was found: %s", r.stderr)
	}
	if got := mustRead(t, filepath.Join(dir, "state.json")); got != `{"n":2}` {
		t.Fatalf("rm --expect with a stale ID changed the file to %q", got)
	}
	r = runIn(t, dir, quick, "", "rm", "--expect", second, "state.json")
	expectCode(t, r, 0, "rm --expect current")
	if _, err := os.Lstat(filepath.Join(dir, "state.json")); !os.IsNotExist(err) {
		t.Fatalf("rm --expect current: file still there (%v)", err)
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Fatalf("residue left after rm: %v", names)
	}
}

func TestWriteKeepsModeOfReplacedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o640)
	expectCode(t, runIn(t, dir, quick, "new", "write", "f"), 0, "write")
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o640 || mustRead(t, path) != "new" {
		t.Fatalf("after write: mode %v, %q; want 0640, new", fi.Mode().Perm(), mustRead(t, path))
	}
	expectCode(t, runIn(t, dir, quick, "newer", "write", "--mode", "0600", "f"), 0, "write --mode")
	fi, _ = os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("write --mode 0600: mode %v", fi.Mode().Perm())
	}
}

// TestUnsafePathsExit77 plants a symlink (to a file that must not be
// touched), a dangling symlink, a FIFO with no writer and a directory where
// a file belongs, and runs every file command on them.
func TestUnsafePathsExit77(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(outside, []byte("precious bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	fiBefore, _ := os.Stat(outside)
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling"))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "adir"), 0o755)
	os.Symlink(dir, filepath.Join(dir, "linkdir"))
	id := strings.TrimSpace(runIn(t, dir, quick, "x", "write", "real").stdout)

	for _, name := range []string{"link", "dangling", "fifo", "adir", "linkdir/real"} {
		for _, args := range [][]string{
			{"stat", name},
			{"rm", "--expect", id, name},
			{"write", name},
			{"write", "--no-replace", name},
			{"write", "--expect", id, name},
		} {
			if name == "adir" && args[0] == "stat" {
				continue // a directory has an identity too
			}
			r := runIn(t, dir, quick, "overwritten", args...)
			what := "exactfs " + strings.Join(args, " ")
			if args[0] == "write" && args[1] == "--no-replace" && name != "linkdir/real" {
				expectCode(t, r, exitMismatch, what) // the name is taken: nothing replaced
			} else {
				expectCode(t, r, exitUnsafe, what)
			}
			checkPrompt(t, r, time.Second, what)
		}
	}
	if got := mustRead(t, outside); got != "precious bytes" {
		t.Fatalf("the symlink's target was changed to %q", got)
	}
	fiAfter, _ := os.Stat(outside)
	if !fiAfter.ModTime().Equal(fiBefore.ModTime()) {
		t.Fatal("the symlink's target was rewritten")
	}
	for _, name := range []string{"link", "dangling"} {
		if fi, err := os.Lstat(filepath.Join(dir, name)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("%s is no longer a symlink", name)
		}
	}
	if fi, err := os.Lstat(filepath.Join(dir, "fifo")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatal("the FIFO is gone")
	}
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); !os.IsNotExist(err) {
		t.Fatal("a write through the dangling symlink created its target")
	}
	if got := mustRead(t, filepath.Join(dir, "real")); got != "x" {
		t.Fatalf("real was changed through linkdir to %q", got)
	}
}

func TestRmRefusesHardLink(t *testing.T) {
	dir := t.TempDir()
	runIn(t, dir, quick, "x", "write", "a")
	if err := os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(runIn(t, dir, quick, "", "stat", "--id", "a").stdout)
	expectCode(t, runIn(t, dir, quick, "", "rm", "--expect", id, "a"), exitUnsafe, "rm of a hard-linked file")
	if mustRead(t, filepath.Join(dir, "a")) != "x" || mustRead(t, filepath.Join(dir, "b")) != "x" {
		t.Fatal("a hard-linked file lost a name or its bytes")
	}
}

func TestDoctorProbesAndCleansUp(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "cfg")
	if err := os.Mkdir(cfg, 0o700); err != nil { // a missing --config-root is refused
		t.Fatal(err)
	}
	r := runIn(t, dir, 30*time.Second, "", "doctor", "--config-root", cfg, dir)
	expectCode(t, r, 0, "doctor")
	for _, want := range []string{"filesystem", "rename no-replace", "atomic exchange", "hard links", "OFD locks", "What this means", "host id:"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, r.stdout)
		}
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Fatalf("doctor left %v in %s", names, dir)
	}
}

func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
