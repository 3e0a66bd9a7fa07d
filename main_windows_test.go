package exactfs

import (
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
func TestMain(m *testing.M) {
	restore := sys.OpenGateForTest()
	code := m.Run()
	restore()
	os.Exit(code)
}
