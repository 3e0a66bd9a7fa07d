//go:build unix

package exactfs

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/exactfs/exactfs/internal/hook"
)

// plantSize is a planted file's size: sparse, it costs the planter
// nothing; read, it would cost the remover minutes of hashing.
const plantSize = 16 << 30

// plantTree makes dir/legacy (a stale lock directory: an info file and a
// subdirectory with one file), opens dir, and takes the judge's look at
// the tree (CaptureTreeWithin). It returns the open directory and the look.
func plantTree(t *testing.T) (string, *Dir, *Tree) {
	t.Helper()
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "legacy", "sub"), 0o700))
	putFile(t, filepath.Join(dir, "legacy", "info"), []byte(`{"pid":1}`))
	putFile(t, filepath.Join(dir, "legacy", "sub", "x"), []byte("x"))
	d, err := OpenDir(dir)
	must(t, err)
	t.Cleanup(func() { d.Close() })
	look, err := d.CaptureTreeWithin("legacy", TreeLimits{Entries: 16, Depth: 4, FileSize: RecordCap})
	must(t, err)
	return dir, d, look
}

// sparse makes path a sparse file of plantSize bytes.
func sparse(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	must(t, err)
	defer f.Close()
	must(t, f.Truncate(plantSize))
}

// readsOf records the files whose bytes a capture starts to read
// (hook.CaptureRead fires after the fstat, before the first read).
func readsOf(t *testing.T) func() []string {
	var mu sync.Mutex
	var read []string
	withHook(t, hook.CaptureRead, func(p string) { mu.Lock(); read = append(read, p); mu.Unlock() })
	return func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), read...) }
}

func wantUnread(t *testing.T, reads []string, name string) {
	t.Helper()
	for _, p := range reads {
		if filepath.Base(p) == name {
			t.Fatalf("the planted %s was read (reads: %q)", name, reads)
		}
	}
}

func wantRefusedNaming(t *testing.T, err error, name string) {
	t.Helper()
	wantCode(t, err, CodeIdentityMismatch)
	if !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "not read") {
		t.Fatalf("the refusal does not name %s as unread: %v", name, err)
	}
}

// A file of 16 GiB (sparse) planted in a judged tree between the look and
// the exact removal is refused by name, unread, and the tree stays whole.
// On the code before RecaptureTree the removal's capture hashed all of it
// (hook.CaptureRead sees its read start).
func TestTreePlantedAfterLookIsNotRead(t *testing.T) {
	dir, d, look := plantTree(t)
	sparse(t, filepath.Join(dir, "legacy", "sub", "big"))
	reads := readsOf(t)
	err := d.RemoveTreeExact("legacy", look)
	wantUnread(t, reads(), "big")
	wantRefusedNaming(t, err, "sub/big")
	if !strings.Contains(err.Error(), "nothing was removed") {
		t.Fatalf("the refusal does not say nothing was removed: %v", err)
	}
	wantListing(t, filepath.Join(dir, "legacy", "sub"), "big", "x")

	// RecaptureTree, the statelock's look again, refuses it the same way.
	_, err = d.RecaptureTree("legacy", look)
	wantRefusedNaming(t, err, "sub/big")
	wantUnread(t, reads(), "big")
}

// Planted inside the removal, after its capture and before the detach
// (hook.TreeCaptured): the detached tree's capture refuses it unread and
// puts the tree back.
func TestTreePlantedBeforeDetachIsNotRead(t *testing.T) {
	dir, d, look := plantTree(t)
	reads := readsOf(t)
	withHook(t, hook.TreeCaptured, hook.Once(func(string) { sparse(t, filepath.Join(dir, "legacy", "big")) }))
	err := d.RemoveTreeExact("legacy", look)
	wantUnread(t, reads(), "big")
	wantRefusedNaming(t, err, "big")
	wantListing(t, filepath.Join(dir, "legacy"), "big", "info", "sub")
}

// A file of the judged tree grown to 16 GiB after the detach
// (hook.TreeDetached) is refused on its size, unread past its snapshot
// size, and the tree is put back.
func TestTreeFileGrownAfterDetachIsNotRead(t *testing.T) {
	dir, d, look := plantTree(t)
	reads := readsOf(t)
	withHook(t, hook.TreeDetached, hook.Once(func(string) {
		sparse(t, filepath.Join(dir, "legacy"+RemovingSuffix, "sub", "x"))
	}))
	err := d.RemoveTreeExact("legacy", look)
	wantRefusedNaming(t, err, "sub/x")
	for _, p := range reads() {
		if strings.Contains(p, RemovingSuffix) && filepath.Base(p) == "x" {
			t.Fatalf("the grown file was read in the detached tree (reads: %q)", reads())
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "legacy", "sub", "x")); err != nil || st.Size() != plantSize {
		t.Fatalf("the grown file is not back in place: %v, %v", st, err)
	}
}

// Without a plant, the removal removes the judged tree.
func TestTreeRemovalOfTheLookSucceeds(t *testing.T) {
	dir, d, look := plantTree(t)
	must(t, d.RemoveTreeExact("legacy", look))
	wantListing(t, dir)
}
