package exactfs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/testfs"
)

// The root package's exact primitives on Windows (issue 22 step 2), on
// internal/sys's handles, with the gate open for this test binary only
// (main_windows_test.go).

func mustWrite(t *testing.T, p, data string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestWindowsPublish: Publish creates a new name whole and never replaces.
func TestWindowsPublish(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "rec")
	id, err := Publish(p, []byte("first"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, p); got != "first" {
		t.Fatalf("published %q", got)
	}
	if _, now, err := Capture(p); err != nil || !now.SameContent(id) {
		t.Fatalf("Capture after Publish: %v %v, want %v", now, err, id)
	}
	before := testfs.Tree(t, dir)
	if _, err := Publish(p, []byte("second"), 0o644); CodeOf(err) != CodeDestinationExists {
		t.Fatalf("Publish over an existing name: %v, want destination_exists", err)
	}
	if after := testfs.Tree(t, dir); !slices.Equal(after, before) || mustRead(t, p) != "first" {
		t.Fatalf("a refused Publish changed the directory: %q -> %q", before, after)
	}
}

// TestWindowsWriteFileReplaces: WriteFile replaces a closed file, and a
// file a reader holds open for a moment (legacy rename semantics refuse
// to replace an open target: the reader is waited for, within a bound).
func TestWindowsWriteFileReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	mustWrite(t, p, "v1")
	if _, err := WriteFile(p, []byte("v2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, p); got != "v2" {
		t.Fatalf("after WriteFile: %q", got)
	}
	r, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		time.Sleep(150 * time.Millisecond)
		r.Close()
		close(done)
	}()
	if _, err := WriteFile(p, []byte("v3"), 0o644); err != nil {
		t.Fatalf("WriteFile while a reader held the file for 150 ms: %v", err)
	}
	<-done
	if got := mustRead(t, p); got != "v3" {
		t.Fatalf("after WriteFile: %q", got)
	}
	if got := testfs.Tree(t, dir); len(got) != 1 {
		t.Fatalf("residue: %q", got)
	}
}

// TestWindowsReplaceExpectedIsAtomicUnavailable: Windows has no exchange
// rename, so compare-and-swap refuses with atomic_unavailable, before it
// stages or flushes anything.
func TestWindowsReplaceExpectedIsAtomicUnavailable(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	mustWrite(t, p, "v1")
	_, id, err := Capture(p)
	if err != nil {
		t.Fatal(err)
	}
	before := testfs.Tree(t, dir)
	_, err = ReplaceExpected(p, []byte("v2"), id)
	if CodeOf(err) != CodeAtomicUnavailable {
		t.Fatalf("ReplaceExpected: %v, want atomic_unavailable", err)
	}
	if after := testfs.Tree(t, dir); !slices.Equal(after, before) || mustRead(t, p) != "v1" {
		t.Fatalf("ReplaceExpected changed the directory: %q -> %q", before, after)
	}
}

// TestWindowsUnlinkExact: the expected file goes, a changed one stays.
func TestWindowsUnlinkExact(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "F.lock")
	mustWrite(t, p, "mine")
	_, id, err := Capture(p)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, p, "othr")
	if err := UnlinkExact(p, id, ".gjc-delete-a"); CodeOf(err) != CodeIdentityMismatch {
		t.Fatalf("UnlinkExact of a changed file: %v, want identity_mismatch", err)
	}
	if got := mustRead(t, p); got != "othr" {
		t.Fatalf("the changed file is now %q", got)
	}
	_, id, err = Capture(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := UnlinkExact(p, id, ".gjc-delete-b"); err != nil {
		t.Fatalf("UnlinkExact: %v", err)
	}
	if got := testfs.Tree(t, dir); len(got) != 0 {
		t.Fatalf("left behind: %q", got)
	}
}

// TestWindowsRemoveTreeExact: a captured tree is removed whole.
func TestWindowsRemoveTreeExact(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "claim")
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(root, "owner"), "x")
	mustWrite(t, filepath.Join(root, "sub", "y"), "y")
	tree, err := CaptureTree(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := RemoveTreeExact(root, tree); err != nil {
		t.Fatalf("RemoveTreeExact: %v", err)
	}
	if got := testfs.Tree(t, dir); len(got) != 0 {
		t.Fatalf("left behind: %q", got)
	}
}

// TestWindowsRenameNoReplace: a free name is taken, a taken one refused.
func TestWindowsRenameNoReplace(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	mustWrite(t, a, "A")
	mustWrite(t, b, "B")
	if _, err := RenameNoReplace(a, b); CodeOf(err) != CodeDestinationExists {
		t.Fatalf("RenameNoReplace onto a taken name: %v", err)
	}
	if mustRead(t, a) != "A" || mustRead(t, b) != "B" {
		t.Fatal("a refused rename changed a file")
	}
	if _, err := RenameNoReplace(a, filepath.Join(dir, "c")); err != nil {
		t.Fatal(err)
	}
	if mustRead(t, filepath.Join(dir, "c")) != "A" {
		t.Fatal("moved the wrong bytes")
	}
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatalf("Dir.Sync: %v", err)
	}
}
