//go:build linux

package exactfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/exactfs/exactfs/internal/hook"
)

// The windows of an exact tree removal that are by name (the reference's
// tree-removal scenarios): between the capture of the live tree and its
// detach, between the proof of an entry and its removal, and between the
// last entry and the rmdir of <dir>.removing. A successor planted in any
// of them survives, inode- and byte-identical, and the error names where.
func TestRemoveTreeWindows(t *testing.T) {
	t.Run("file entry replaced after its check", func(t *testing.T) {
		dir := t.TempDir()
		root := filepath.Join(dir, "t")
		makeTree(t, root)
		tree := captureTreeT(t, root)
		detached := root + RemovingSuffix
		var ino uint64
		withHook(t, hook.TreeEntryChecked, hook.Once(func(where string) {
			// Entries go bottom-up in byte order: z/h comes first.
			if where != filepath.Join(detached, "z", "h") {
				t.Errorf("first entry checked is %s", where)
			}
			ino = plant(t, filepath.Join(detached, "z", "h"), []byte("successor"))
		}))
		err := RemoveTreeExact(root, tree)
		wantCode(t, err, CodeIdentityMismatch)
		if !strings.Contains(err.Error(), filepath.Join(detached, "z", "h")) {
			t.Errorf("the error does not name the successor's path: %v", err)
		}
		wantFile(t, filepath.Join(detached, "z", "h"), []byte("successor"), ino)
	})

	t.Run("directory entry replaced after its check", func(t *testing.T) {
		dir := t.TempDir()
		root := filepath.Join(dir, "t")
		makeTree(t, root)
		tree := captureTreeT(t, root)
		detached := root + RemovingSuffix
		target := filepath.Join(detached, "empty")
		var ino uint64
		withHook(t, hook.TreeEntryChecked, func(where string) {
			if where != target || ino != 0 {
				return
			}
			// Another process renames its own (empty) directory over the
			// checked one: rename(2) replaces an empty directory (os.Rename
			// refuses to, so the system call is made directly).
			foreign := filepath.Join(dir, "foreign")
			must(t, os.Mkdir(foreign, 0o700))
			ino = inode(t, foreign)
			must(t, syscall.Rename(foreign, target))
		})
		err := RemoveTreeExact(root, tree)
		wantCode(t, err, CodeIdentityMismatch)
		if ino == 0 {
			t.Fatal("the hook never fired for the empty directory")
		}
		if got := inode(t, target); got != ino {
			t.Fatalf("%s is inode %d, want the planted directory %d", target, got, ino)
		}
	})

	t.Run("detached root replaced before its rmdir", func(t *testing.T) {
		dir := t.TempDir()
		root := filepath.Join(dir, "t")
		makeTree(t, root)
		tree := captureTreeT(t, root)
		detached := root + RemovingSuffix
		var ino uint64
		withHook(t, hook.TreeEmptied, hook.Once(func(string) {
			foreign := filepath.Join(dir, "foreign")
			must(t, os.Mkdir(foreign, 0o700))
			ino = inode(t, foreign)
			must(t, syscall.Rename(foreign, detached))
		}))
		err := RemoveTreeExact(root, tree)
		wantCode(t, err, CodeIdentityMismatch)
		var e *Error
		if !errors.As(err, &e) || len(e.Residue) != 1 || e.Residue[0] != detached {
			t.Fatalf("error %v does not name %s as what is left", err, detached)
		}
		if got := inode(t, detached); got != ino {
			t.Fatalf("%s is inode %d, want the planted directory %d", detached, got, ino)
		}
		// The next call with the same snapshot refuses the stranger too.
		wantCode(t, RemoveTreeExact(root, tree), CodeIdentityMismatch)
		if got := inode(t, detached); got != ino {
			t.Fatalf("a second call removed the planted directory")
		}
	})

	t.Run("root replaced between capture and detach", func(t *testing.T) {
		dir := t.TempDir()
		root := filepath.Join(dir, "t")
		makeTree(t, root)
		tree := captureTreeT(t, root)
		moved := filepath.Join(dir, "moved")
		var ino uint64
		withHook(t, hook.TreeCaptured, hook.Once(func(string) {
			must(t, os.Rename(root, moved))
			must(t, os.Mkdir(root, 0o700))
			ino = plant(t, filepath.Join(root, "successor"), []byte("live"))
		}))
		wantCode(t, RemoveTreeExact(root, tree), CodeIdentityMismatch)
		wantListing(t, dir, "moved", "t")
		wantFile(t, filepath.Join(root, "successor"), []byte("live"), ino)
		// The original tree, moved away by its owner, is untouched.
		if diff := compareTrees(tree, captureTreeT(t, moved), true); diff != "" {
			t.Fatalf("the moved tree changed: %s", diff)
		}
	})
}
