//go:build unix

package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/exactfs/exactfs"
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

func wantCode(t *testing.T, err error, c exactfs.Code) {
	t.Helper()
	if got := CodeOf(err); got != c {
		t.Fatalf("error %v: code %q, want %q", err, got, c)
	}
}

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func chmod(t *testing.T, p string, m os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}

// plantRecord writes a record that this test, not a lease, owns.
func plantRecord(t *testing.T, dir, name string, r LeaseRecord) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name+".lock"), r.Marshal(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// aclStep returns the ACL step an error names (operation and attribute of
// its *ACLError cause, without the system error), or the zero value.
func aclStep(err error) ACLError {
	var acl *ACLError
	if !errors.As(err, &acl) {
		return ACLError{}
	}
	return ACLError{Operation: acl.Operation, Attribute: acl.Attribute}
}
