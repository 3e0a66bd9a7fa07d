//go:build unix

package statelock

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/exactfs/exactfs"
)

// kernelProvesNoWriter reports whether the kernel here can prove that no
// process has a file open for writing (Linux's lease probe), asked the way
// the rules ask it (exactfs.ProbeWriter) of a file in the test's temporary
// directory. Where it cannot (macOS, the BSDs, the exactfs_portable build,
// a filesystem that grants no leases), the abandoned-write rule has no
// proof, and a torn record it would reclaim is kept instead: the tests that
// assert that rule assert the keep there.
func kernelProvesNoWriter(t *testing.T) bool {
	t.Helper()
	p := filepath.Join(t.TempDir(), "lease-probe")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, _ := exactfs.ProbeWriter(f)
	return a == exactfs.AnswerNo
}

// The modes the lock's records and the directories it makes have here
// (SPEC §4.1).
const (
	recordMode = os.FileMode(0o600)
	dirPerm    = os.FileMode(0o700)
)

// symlinksHere reports whether the test may plant symlinks: always here.
func symlinksHere(*testing.T) bool { return true }
