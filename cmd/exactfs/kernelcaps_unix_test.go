//go:build unix

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/sys"
)

// kernelTells reports what the exactfs under test can ask the kernel about
// a file in the test's temporary directory: whether a process holds an OFD
// lock on it (ofd), and whether a process has it open for writing (writer,
// the lease probe). This test binary is built with the tags of the exactfs
// binary it runs (CI's portable lane passes them through GOFLAGS), so it
// asks the same code. Both are false on macOS, the BSDs and in the portable
// build; there recover keeps what only those answers could prove removable
// and says how to remove it by hand, and the tests assert that.
func kernelTells(t *testing.T) (ofd, writer bool) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kernel-probe")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, ofd = sys.OFDHeld(int(f.Fd()), 0, 0)
	a, _ := exactfs.ProbeWriter(f)
	return ofd, a == exactfs.AnswerNo
}
