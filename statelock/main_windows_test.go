package statelock

import (
	"fmt"
	"os"
	"testing"

	"github.com/exactfs/exactfs/internal/sys"
)

// TestMain opens internal/sys's Windows gate for this test binary, so
// statelock's Windows path (records created with create-new semantics,
// claims by mkdir, the exact unlink through the root, the LockFileEx
// attestation of ofd_windows.go) is proven under Wine and on real
// Windows, while every program built from the module keeps failing
// closed (TestWindowsLockFailsClosed shuts the gate again to check that).
// Under Wine only, it also turns on the owner-only substitute
// (sys.WineOwnerOnlyForTest): Wine keeps no DACL, so the host identity's
// config root and secret could not be proved owner-only there; on real
// Windows the DACLs are proved for real.
//
// With winChildEnv set, the binary is a child process of a test (see
// winChildren) and runs no test.
func TestMain(m *testing.M) {
	closeGate := sys.OpenGateForTest()
	restoreOwner, _ := sys.WineOwnerOnlyForTest()
	if mode := os.Getenv(winChildEnv); mode != "" {
		child := winChildren[mode]
		if child == nil {
			fmt.Fprintf(os.Stderr, "unknown child mode %q\n", mode)
			os.Exit(2)
		}
		if err := child(); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// As on Unix (worker_test.go): the tests check what the reference
	// release leaves on disk; sticky ownership has its own tests.
	defaultPolicy.Sticky = false
	code := m.Run()
	restoreOwner()
	closeGate()
	os.Exit(code)
}

// winChildEnv names the child mode a test re-executes this binary in.
const winChildEnv = "STATELOCK_WINDOWS_TEST_CHILD"

// winChildren are the child modes, registered by the Windows test files.
var winChildren = map[string]func() error{}
