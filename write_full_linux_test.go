package exactfs

// Write tests that need a Linux mount (a tmpfs of a given size); the rest
// of the write tests (write_test.go) run on every Unix.

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/exactfs/exactfs/internal/testfs"
)

// A write that fails (here: the filesystem is full) leaves no staging file:
// its name is a fresh UUID that only this call created.
func TestFailedStagingLeavesNoResidue(t *testing.T) {
	testfs.RequireRoot(t)
	dir := filepath.Join(t.TempDir(), "small")
	must(t, os.Mkdir(dir, 0o755))
	err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=256k")
	testfs.Require(t, "a small tmpfs mount", err == nil, fmt.Sprint(err))
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	big := make([]byte, 1<<20)
	for name, op := range map[string]func(p string) error{
		"publish": func(p string) error { _, err := Publish(p, big, 0o600); return err },
		"write":   func(p string) error { _, err := WriteFile(p, big, 0o600); return err },
	} {
		err := op(filepath.Join(dir, name))
		if err == nil {
			t.Fatalf("%s of 1 MiB into 256 KiB succeeded", name)
		}
		wantListing(t, dir)
	}
}
