//go:build unix

package exactfs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/statelock"
	"github.com/exactfs/exactfs/store"
)

// varLockTarget returns where this system's /var/lock leads, or skips the
// test where it is not a symlink the library trusts (Debian and Ubuntu
// make it a root-owned symlink to /run/lock).
func varLockTarget(t *testing.T) string {
	fi, err := os.Lstat("/var/lock")
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Skip("/var/lock is not a symlink on this system")
	}
	target := exactfs.SystemPath("/var/lock")
	if target == "/var/lock" {
		t.Skip("/var/lock is a symlink the rule does not trust on this system (not root's alone)")
	}
	return target
}

// TestLibraryFollowsVarLock: the library itself, not only the CLI, opens a
// caller's path through /var/lock: statelock.Lock, exactfs.OpenDir and
// store.Open land in the target directory.
func TestLibraryFollowsVarLock(t *testing.T) {
	target := varLockTarget(t)
	name := "exactfs-libtest-" + filepath.Base(t.TempDir())
	t.Cleanup(func() {
		entries, _ := os.ReadDir(target)
		for _, e := range entries {
			if strings.Contains(e.Name(), name) { // the state file, its records and the store
				os.RemoveAll(filepath.Join(target, e.Name()))
			}
		}
	})

	d, err := exactfs.OpenDir("/var/lock")
	if err != nil {
		t.Fatalf("OpenDir(/var/lock): %v", err)
	}
	defer d.Close()
	fi, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if dev, ino := d.Inode(); dev != uint64(st.Dev) || ino != st.Ino {
		t.Fatalf("OpenDir(/var/lock) opened %d:%d, not %s (%d:%d)", dev, ino, target, st.Dev, st.Ino)
	}

	// Beneath an opened directory the same name is not followed.
	root, err := exactfs.OpenDir("/")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if _, err := root.OpenDir("var/lock"); !errors.Is(err, exactfs.ErrReparsePoint) {
		t.Errorf(`OpenDir("/").OpenDir("var/lock"): %v, want reparse_point`, err)
	}

	h, err := statelock.Lock(context.Background(), "/var/lock/"+name)
	if err != nil {
		t.Fatalf("statelock.Lock(/var/lock/%s): %v", name, err)
	}
	if _, err := os.Lstat(filepath.Join(target, name+".lock")); err != nil {
		t.Errorf("the owner record is not in %s: %v", target, err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatalf("Unlock: %v", err)
	}

	s, err := store.Open("/var/lock/"+name+"-store", store.Create())
	if err != nil {
		t.Fatalf("store.Open(/var/lock/%s-store, Create): %v", name, err)
	}
	s.Close()
	if fi, err := os.Lstat(filepath.Join(target, name+"-store")); err != nil || !fi.IsDir() {
		t.Errorf("the store directory is not in %s: %v", target, err)
	}
}
