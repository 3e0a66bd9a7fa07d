package exactfs

import (
	"fmt"
	"os"
	"testing"

	"github.com/exactfs/exactfs/internal/sys"
)

// TestMain opens internal/sys's Windows gate for this test binary, so the
// root package's Windows code (its path rules, walks from a volume's root,
// and the primitives on internal/sys's handles) is proven under Wine and
// on real Windows. Every program built from the module keeps the gate
// shut until the lock's attestation (issue 22 step 4) lands: the root's
// primitives are what statelock is built on, and statelock has no gate of
// its own. TestWindowsFailsClosed shuts the gate again to check that.
//
// With windowsChildEnv set, the binary is a child process of a test (see
// windowsChildren) and runs no test.
func TestMain(m *testing.M) {
	restore := sys.OpenGateForTest()
	if mode := os.Getenv(windowsChildEnv); mode != "" {
		child := windowsChildren[mode]
		if child == nil {
			fmt.Fprintf(os.Stderr, "unknown child mode %q\n", mode)
			os.Exit(2)
		}
		if err := child(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	restore()
	os.Exit(code)
}

// windowsChildEnv names the child mode a test re-executes this binary in.
const windowsChildEnv = "EXACTFS_WINDOWS_TEST_CHILD"

var windowsChildren = map[string]func() error{
	"dirlock-hold": childHoldDirLock,
}
