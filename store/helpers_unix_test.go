//go:build unix

package store

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// testPlatform prepares the platform for a test that uses the store on
// disk: nothing on Unix.
func testPlatform(testing.TB) {}

// testOwnerOnlyDir makes the directory d owner-only the platform's way:
// on Unix its mode 0700 is that.
func testOwnerOnlyDir(testing.TB, string) {}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func openFds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd to count descriptors:", err)
	}
	return len(ents)
}

// skipUnderWine skips a test of what Wine lacks; there is no Wine on Unix.
func skipUnderWine(*testing.T, string) {}
