// Package testfs gives tests real filesystems to run against: a fresh tmpfs,
// loop-mounted xfs and ext4 images that can be cut off like a power loss and
// mounted again, and a FUSE mount (bindfs) that rejects rename flags; and
// the faults of those filesystems (fault_linux.go): full of data, out of
// inodes, remounted read-only, forced read-only by the kernel while files
// are open for writing, shut down (every call fails with EIO).
//
// Every helper needs root and some tool from Debian (mount, mkfs.xfs, bindfs,
// ...). When one is missing, the policy of [Require] applies: the test is
// skipped on a developer's machine and fails in CI, so a CI run cannot pass
// by silently skipping the tests that matter. .ci/run installs every tool
// these helpers use.
//
// Mounts are registered with t.Cleanup and unmounted when the test ends. A
// test binary that is killed (a timeout panic, SIGKILL) leaves its mounts
// behind; they live under the test's temporary directory and can be found
// with `findmnt | grep Test`.
package testfs

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// Strict reports whether a missing prerequisite must fail the test rather
// than skip it: in CI (CI=true, as .ci/run is started) or when
// EXACTFS_TEST_STRICT=1 asks for the same locally.
func Strict() bool {
	return os.Getenv("CI") == "true" || os.Getenv("EXACTFS_TEST_STRICT") == "1"
}

// Require stops the test when a prerequisite does not hold. what names the
// prerequisite ("root", "bindfs", "node 20"), ok says whether it holds, and
// reason says why it does not. Outside CI the test is skipped; in CI (see
// [Strict]) it fails, because CI installs everything the suite needs and a
// skip there would hide a test that never ran.
func Require(t testing.TB, what string, ok bool, reason string) {
	t.Helper()
	if ok {
		return
	}
	if Strict() {
		t.Fatalf("CI requires %s, which is unavailable: %s (tests may skip only outside CI)", what, reason)
	} else {
		t.Skipf("needs %s: %s", what, reason)
	}
}

// IsRoot reports whether the process runs with effective uid 0.
func IsRoot() bool { return os.Geteuid() == 0 }

// RequireRoot applies [Require] to running as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	Require(t, "root", IsRoot(), "not running as root (euid "+strconv.Itoa(os.Geteuid())+")")
}

// RequireCommand applies [Require] to each named program being on $PATH, and
// returns the path of the first one.
func RequireCommand(t testing.TB, names ...string) string {
	t.Helper()
	var first string
	for i, name := range names {
		p, err := exec.LookPath(name)
		Require(t, name, err == nil, "not found in $PATH (.ci/run installs it with apt-get)")
		if i == 0 {
			first = p
		}
	}
	return first
}

// Tree lists everything below dir, read with package os: relative paths,
// directories with a trailing separator, files with their mode and size.
// Tests that an operation created or changed nothing compare two listings.
func Tree(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if e.IsDir() {
			out = append(out, rel+string(filepath.Separator))
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s %v %d", rel, info.Mode(), info.Size()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
