//go:build linux

package statelock

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/exactfs/exactfs/internal/testfs"
)

// TestAdversaryUpdateRefusesPlantedStateBeforeReading: in a shared sticky
// directory (1777, root's, as /tmp) another uid planted the state file
// (0644, readable by all). Update cannot replace it (the successor would
// be handed to whoever planted the name, exactfs.WriteFile's rule, which
// refuses even root there), so it must say so before it reads the file
// and calls the function: today it reads the whole file (a 1 GiB plant
// cost 38 s and 3.3 GB of RSS to the exactfs command), runs the function
// (the command's side effects happen), and only then refuses the write.
// Reproduce: mkdir -m 1777 /tmp/t; as uid B: truncate -s 1G /tmp/t/s.json;
// chmod 644; as uid A: exactfs update /tmp/t/s.json -- sh -c 'wc -c; echo x'
// prints 1073741824 (the command ran), then exits 74 after ~35 s.
// Proposed fix: in Update, before readState's Capture, check the owner
// rule on the captured descriptor's identity (uid neither ours nor the
// directory's, directory sticky → the same permission_denied error
// WriteFile gives) and return it without reading or calling fn.
func TestAdversaryUpdateRefusesPlantedStateBeforeReading(t *testing.T) {
	testfs.RequireRoot(t)
	e := newEnv(t)
	if err := syscall.Chmod(e.dir, 0o1777); err != nil {
		t.Fatal(err)
	}
	const planter = 4331
	if err := os.WriteFile(e.state, []byte("planted"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(e.state, planter, planter); err != nil {
		t.Fatal(err)
	}
	called := false
	err := Update(context.Background(), e.state, func(old []byte) ([]byte, error) {
		called = true
		return []byte("mine"), nil
	}, e.opts()...)
	if err == nil || !strings.Contains(err.Error(), "4331") {
		t.Fatalf("Update over a planted state file: %v", err)
	}
	if called {
		t.Errorf("Update called the function over a state file it then refused to replace: %v", err)
	}
	if b := mustRead(t, e.state); string(b) != "planted" {
		t.Errorf("state file %q", b)
	}
}
