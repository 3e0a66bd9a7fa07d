//go:build unix

package exactfs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/exactfs/exactfs/internal/hook"
)

func init() {
	// tree-crash <dir> <snapshot.json>: killed right after the detach.
	children["tree-crash"] = func(args []string) error {
		b, err := os.ReadFile(args[1])
		if err != nil {
			return err
		}
		var tree Tree
		if err := json.Unmarshal(b, &tree); err != nil {
			return err
		}
		killSelfAt(hook.TreeDetached)
		return RemoveTreeExact(args[0], &tree)
	}
}

// makeTree builds a small tree at root: nested directories, files, an empty
// file, an empty directory, and names that sort around "/".
func makeTree(t *testing.T, root string) {
	t.Helper()
	for _, d := range []string{"a/b/c", "a-b", "empty", "z"} {
		must(t, os.MkdirAll(filepath.Join(root, d), 0o700))
	}
	for name, data := range map[string]string{
		"a/b/c/deep": "deep", "a/f": "f", "a-b/g": "g", "a.txt": "", "z/h": "h", "a/b/ü": "utf8",
	} {
		putFile(t, filepath.Join(root, name), []byte(data))
	}
}

func captureTreeT(t *testing.T, root string) *Tree {
	t.Helper()
	tree, err := CaptureTree(root)
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

func testCaptureTree(t *testing.T, dir string) {
	root := filepath.Join(dir, "t")
	makeTree(t, root)
	tree := captureTreeT(t, root)
	var paths []string
	for _, e := range tree.Entries {
		paths = append(paths, e.Path)
	}
	want := []string{"", "a", "a-b", "a-b/g", "a.txt", "a/b", "a/b/c", "a/b/c/deep", "a/b/ü", "a/f", "empty", "z", "z/h"}
	if !slices.Equal(paths, want) {
		t.Fatalf("entries %q, want %q", paths, want)
	}
	for _, e := range tree.Entries {
		p := filepath.Join(root, e.Path)
		if e.Identity.Ino != inode(t, p) {
			t.Fatalf("%s: wrong inode", e.Path)
		}
		if e.Identity.Mode.IsRegular() {
			data, _ := os.ReadFile(p)
			if e.Identity.SHA256 != sum256(data) {
				t.Fatalf("%s: wrong digest", e.Path)
			}
		}
	}
	// A tree that holds anything RemoveTreeExact could not prove is refused.
	for _, tc := range []struct {
		name string
		add  func(p string) error
		code Code
	}{
		{"symlink", func(p string) error { return os.Symlink("a", p) }, CodeReparsePoint},
		{"fifo", func(p string) error { return mkfifo(p) }, CodeUnsupportedEntry},
		{"hard link", func(p string) error { return os.Link(filepath.Join(root, "a", "f"), p) }, CodeHardLinkUnsupported},
		{"not utf8", func(p string) error { return os.WriteFile(filepath.Join(filepath.Dir(p), "bad\xff"), nil, 0o600) }, CodeNotUTF8},
	} {
		p := filepath.Join(root, "a", "b", "odd")
		must(t, tc.add(p))
		_, err := CaptureTree(root)
		wantCode(t, err, tc.code)
		os.Remove(p)
		os.Remove(filepath.Join(root, "a", "b", "bad\xff"))
	}
	_, err := CaptureTree(filepath.Join(root, "a", "f"))
	wantCode(t, err, CodeNotDirectory)
}

func testRemoveTreeExact(t *testing.T, dir string) {
	root := filepath.Join(dir, "t")
	makeTree(t, root)
	tree := captureTreeT(t, root)
	if err := RemoveTreeExact(root, tree); err != nil {
		t.Fatal(err)
	}
	wantListing(t, dir)
	wantCode(t, RemoveTreeExact(root, tree), CodeNotFound)
}

// Any difference from the snapshot, found before or after the detach,
// removes nothing: the tree is back at its name and the differing object
// is exactly what was put there.
func testRemoveTreeExactChanged(t *testing.T, dir string) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, root string) func(t *testing.T, root string)
		code   Code
	}{
		{"nested file substituted", func(t *testing.T, root string) func(t *testing.T, root string) {
			p := filepath.Join(root, "a", "b", "c", "deep")
			ino := plant(t, p, []byte("deep"))
			return func(t *testing.T, root string) {
				wantFile(t, filepath.Join(root, "a", "b", "c", "deep"), []byte("deep"), ino)
			}
		}, CodeIdentityMismatch},
		{"entry added", func(t *testing.T, root string) func(t *testing.T, root string) {
			putFile(t, filepath.Join(root, "a", "b", "new"), []byte("new"))
			return func(t *testing.T, root string) { wantFile(t, filepath.Join(root, "a", "b", "new"), []byte("new"), 0) }
		}, CodeIdentityMismatch},
		{"hard link added", func(t *testing.T, root string) func(t *testing.T, root string) {
			outside := filepath.Join(filepath.Dir(root), "outside")
			must(t, os.Link(filepath.Join(root, "z", "h"), outside))
			return func(t *testing.T, root string) {
				wantFile(t, filepath.Join(root, "z", "h"), []byte("h"), inode(t, outside))
				os.Remove(outside)
			}
		}, CodeHardLinkUnsupported},
		{"entry removed", func(t *testing.T, root string) func(t *testing.T, root string) {
			must(t, os.Remove(filepath.Join(root, "a-b", "g")))
			return func(t *testing.T, root string) {}
		}, CodeIdentityMismatch},
		{"directory substituted", func(t *testing.T, root string) func(t *testing.T, root string) {
			must(t, os.Rename(filepath.Join(root, "empty"), filepath.Join(filepath.Dir(root), "gone")))
			must(t, os.Mkdir(filepath.Join(root, "empty"), 0o700))
			ino := inode(t, filepath.Join(root, "empty"))
			return func(t *testing.T, root string) {
				if inode(t, filepath.Join(root, "empty")) != ino {
					t.Fatal("substituted directory replaced")
				}
				os.Remove(filepath.Join(filepath.Dir(root), "gone"))
			}
		}, CodeIdentityMismatch},
	} {
		for _, when := range []string{"before", "after detach"} {
			t.Run(tc.name+"/"+when, func(t *testing.T) {
				sub := filepath.Join(dir, "c")
				must(t, os.Mkdir(sub, 0o700))
				defer os.RemoveAll(sub)
				root := filepath.Join(sub, "t")
				makeTree(t, root)
				tree := captureTreeT(t, root)
				var check func(t *testing.T, root string)
				var err error
				if when == "before" {
					check = tc.change(t, root)
					err = RemoveTreeExact(root, tree)
				} else {
					withHookUntil(t, hook.TreeDetached, func(string) {
						check = tc.change(t, root+RemovingSuffix)
					}, func() { err = RemoveTreeExact(root, tree) })
				}
				wantCode(t, err, tc.code)
				// The tree is back at its name, whole apart from the change.
				names := listing(t, sub)
				if !slices.Contains(names, "t") || slices.Contains(names, "t"+RemovingSuffix) {
					t.Fatalf("after a refused removal %s holds %q", sub, names)
				}
				check(t, root)
				for _, e := range tree.Entries {
					if e.Path == "" {
						continue
					}
					if _, err := os.Lstat(filepath.Join(root, e.Path)); err != nil && tc.name != "entry removed" && tc.name != "directory substituted" {
						t.Fatalf("%s was removed: %v", e.Path, err)
					}
				}
			})
		}
	}
}

// A crash after the detach leaves <dir>.removing, the name is free for a
// successor, and a second call with the same snapshot finishes the job,
// also when the crashed call had already removed part of the tree.
func testRemoveTreeExactReplay(t *testing.T, dir string) {
	for _, partial := range []bool{false, true} {
		root := filepath.Join(dir, "t")
		makeTree(t, root)
		tree := captureTreeT(t, root)
		b, err := json.Marshal(tree)
		if err != nil {
			t.Fatal(err)
		}
		snap := filepath.Join(t.TempDir(), "snapshot.json")
		putFile(t, snap, b)
		runChild(t, "tree-crash", root, snap)
		wantListing(t, dir, "t"+RemovingSuffix)
		if partial {
			must(t, os.Remove(filepath.Join(root+RemovingSuffix, "a", "b", "c", "deep")))
			must(t, os.Remove(filepath.Join(root+RemovingSuffix, "a", "b", "c")))
		}
		// A successor at the free name is not touched by the replay.
		must(t, os.Mkdir(root, 0o700))
		putFile(t, filepath.Join(root, "successor"), []byte("s"))
		if err := RemoveTreeExact(root, tree); err != nil {
			t.Fatalf("replay: %v", err)
		}
		wantListing(t, dir, "t")
		wantFile(t, filepath.Join(root, "successor"), []byte("s"), 0)
		must(t, os.RemoveAll(root))
	}
	// A replay that finds an entry added to the detached tree keeps it.
	root := filepath.Join(dir, "t")
	makeTree(t, root)
	tree := captureTreeT(t, root)
	b, _ := json.Marshal(tree)
	snap := filepath.Join(t.TempDir(), "snapshot.json")
	putFile(t, snap, b)
	runChild(t, "tree-crash", root, snap)
	putFile(t, filepath.Join(root+RemovingSuffix, "a", "late"), []byte("late"))
	err := RemoveTreeExact(root, tree)
	wantCode(t, err, CodeIdentityMismatch)
	wantFile(t, filepath.Join(root+RemovingSuffix, "a", "late"), []byte("late"), 0)
	// A <dir>.removing that is not the snapshot's root is left alone.
	other := filepath.Join(dir, "u")
	makeTree(t, other)
	otherTree := captureTreeT(t, other)
	wantCode(t, RemoveTreeExact(root, otherTree), CodeIdentityMismatch)
	wantFile(t, filepath.Join(root+RemovingSuffix, "a", "late"), []byte("late"), 0)
}
