//go:build unix

package exactfs_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/exactfs/exactfs"
)

// Compare-and-delete: read a file, decide it is garbage, and delete it
// only if it is still exactly what was read. A file that someone replaced
// meanwhile is kept.
func ExampleUnlinkExact() {
	dir, _ := os.MkdirTemp("", "exactfs-example-")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "old.json")
	os.WriteFile(path, []byte(`{"v":1}`), 0o600)

	data, id, err := exactfs.Capture(path) // no-follow, non-blocking: a symlink or FIFO is refused
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("read %s\n", data)

	// Someone else replaces the file before we delete it.
	exactfs.WriteFile(path, []byte(`{"v":2}`), 0o600)

	err = exactfs.UnlinkExact(path, id, ".gjc-delete-example-"+exactfs.NewUUID())
	fmt.Println("mismatch:", errors.Is(err, exactfs.ErrIdentityMismatch))
	kept, _ := os.ReadFile(path)
	fmt.Printf("kept %s\n", kept)

	// Deleting what is there now, having looked at it, works.
	_, id, _ = exactfs.Capture(path)
	fmt.Println("removed:", exactfs.UnlinkExact(path, id, ".gjc-delete-example-"+exactfs.NewUUID()) == nil)
	// Output:
	// read {"v":1}
	// mismatch: true
	// kept {"v":2}
	// removed: true
}

// Create once, never replace: the second Publish finds the first one's
// file and changes nothing.
func ExamplePublish() {
	dir, _ := os.MkdirTemp("", "exactfs-example-")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "config.json")

	_, err := exactfs.Publish(path, []byte(`{"v":1}`), 0o600)
	fmt.Println("first:", err)
	_, err = exactfs.Publish(path, []byte(`{"v":2}`), 0o600)
	fmt.Println("second exists:", errors.Is(err, exactfs.ErrDestinationExists))
	data, _ := os.ReadFile(path)
	fmt.Printf("%s\n", data)
	// Output:
	// first: <nil>
	// second exists: true
	// {"v":1}
}

// Replace a file atomically and durably: after a crash or power cut at any
// instant the name holds the old bytes or the new ones, never a torn file.
func ExampleWriteFile() {
	dir, _ := os.MkdirTemp("", "exactfs-example-")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "state.json")

	id, err := exactfs.WriteFile(path, []byte(`{"n":1}`), 0o644)
	if err != nil {
		log.Fatal(err)
	}
	fi, _ := os.Stat(path)
	fmt.Println(id.Size, "bytes, mode", fi.Mode().Perm())
	// Output:
	// 7 bytes, mode -rw-r--r--
}

// Compare-and-swap: replace only the version that was read. The loser of a
// race is told, and the winner's file is untouched.
func ExampleReplaceExpected() {
	dir, _ := os.MkdirTemp("", "exactfs-example-")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "state.json")
	exactfs.WriteFile(path, []byte(`{"n":1}`), 0o600)

	_, seen, _ := exactfs.Capture(path)
	if _, err := exactfs.ReplaceExpected(path, []byte(`{"n":2}`), seen); err != nil {
		log.Fatal(err)
	}
	// A second writer that also read {"n":1} loses: re-read and retry.
	_, err := exactfs.ReplaceExpected(path, []byte(`{"n":2}`), seen)
	fmt.Println("stale writer refused:", errors.Is(err, exactfs.ErrIdentityMismatch))
	data, _ := os.ReadFile(path)
	fmt.Printf("%s\n", data)
	// Output:
	// stale writer refused: true
	// {"n":2}
}

// Remove a directory tree only if it is exactly the snapshot that was
// judged to be garbage.
func ExampleRemoveTreeExact() {
	dir, _ := os.MkdirTemp("", "exactfs-example-")
	defer os.RemoveAll(dir)
	cache := filepath.Join(dir, "cache")
	os.MkdirAll(filepath.Join(cache, "a"), 0o700)
	os.WriteFile(filepath.Join(cache, "a", "blob"), []byte("x"), 0o600)

	tree, err := exactfs.CaptureTree(cache) // refuses symlinks, FIFOs, hard links
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(tree.Entries), "entries") // the root, a/ and a/blob

	// Something new appears after the snapshot: the tree is kept.
	os.WriteFile(filepath.Join(cache, "new"), []byte("y"), 0o600)
	err = exactfs.RemoveTreeExact(cache, tree)
	fmt.Println("changed since the snapshot:", errors.Is(err, exactfs.ErrIdentityMismatch))

	tree, _ = exactfs.CaptureTree(cache)
	fmt.Println("removed:", exactfs.RemoveTreeExact(cache, tree) == nil)
	// Output:
	// 3 entries
	// changed since the snapshot: true
	// removed: true
}
