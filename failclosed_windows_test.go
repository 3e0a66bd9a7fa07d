package exactfs

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/exactfs/exactfs/internal/sys"
	"github.com/exactfs/exactfs/internal/testfs"
)

// TestWindowsFailsClosed: while internal/sys's gate is shut (in every
// program built from the module, until issue 22 step 4 opens it; this
// test binary opens it in TestMain and shuts it here), every operation of
// the package must refuse on Windows with
// the unsupported code, and leave the directory exactly as it was: no file,
// no directory, no quarantine or staging name created, nothing changed or
// removed. A port that starts to work half-way (say, a write that stages a
// temporary file before it refuses) fails this test.
func TestWindowsFailsClosed(t *testing.T) {
	defer sys.CloseGateForTest()()
	dir := t.TempDir()
	const content = `{"n":1}`
	existing := filepath.Join(dir, "state.json")
	if err := os.WriteFile(existing, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "tree"), 0o755); err != nil {
		t.Fatal(err)
	}
	want := Identity{Nlink: 1, Size: int64(len(content)), Mode: 0o644, SHA256: sha256.Sum256([]byte(content))}
	before := testfs.Tree(t, dir)

	for _, tc := range []struct {
		name string
		op   func() error
	}{
		{"Capture", func() error { _, _, err := Capture(existing); return err }},
		{"IdentityOf", func() error { _, err := IdentityOf(existing); return err }},
		{"WriteFile/new", func() error { _, err := WriteFile(filepath.Join(dir, "new.json"), []byte("x"), 0o644); return err }},
		{"WriteFile/replace", func() error { _, err := WriteFile(existing, []byte("y"), 0o644); return err }},
		{"Publish", func() error { _, err := Publish(filepath.Join(dir, "pub.json"), []byte("x"), 0o644); return err }},
		{"UnlinkExact", func() error { return UnlinkExact(existing, want, ".gjc-delete-q") }},
		{"RenameNoReplace", func() error { _, err := RenameNoReplace(existing, filepath.Join(dir, "moved.json")); return err }},
		{"OpenDir", func() error {
			d, err := OpenDir(dir)
			if err == nil {
				d.Close()
			}
			return err
		}},
		{"Mkdir", func() error { return Mkdir(filepath.Join(dir, "sub"), 0o755) }},
		{"MkdirAll", func() error { return MkdirAll(filepath.Join(dir, "a", "b"), 0o755) }},
		{"CaptureTree", func() error { _, err := CaptureTree(filepath.Join(dir, "tree")); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.op()
			if err == nil {
				t.Fatalf("%s succeeded on Windows, where internal/sys implements nothing yet", tc.name)
			}
			if CodeOf(err) != CodeUnsupported || !errors.Is(err, ErrUnsupported) {
				t.Fatalf("%s: code %q (%v), want %q", tc.name, CodeOf(err), err, CodeUnsupported)
			}
			if msg := err.Error(); !strings.Contains(msg, "unsupported on windows") || !strings.Contains(msg, "fails closed") {
				t.Fatalf("%s: the error does not say that Windows is unsupported and refused: %q", tc.name, msg)
			}
			if after := testfs.Tree(t, dir); !slices.Equal(after, before) {
				t.Fatalf("%s changed the directory:\nbefore %q\nafter  %q", tc.name, before, after)
			}
			if b, err := os.ReadFile(existing); err != nil || string(b) != content {
				t.Fatalf("%s changed %s: %q, %v", tc.name, existing, b, err)
			}
		})
	}
}
