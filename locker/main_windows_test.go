package locker_test

import (
	"os"
	"testing"

	"github.com/exactfs/exactfs/internal/sys"
)

// TestMain opens internal/sys's Windows gate for this test binary (every
// program keeps it shut), so locker's tests run statelock's Windows path
// under Wine and on real Windows; under Wine only, with the owner-only
// substitute for the host identity's config root (Wine keeps no DACL; see
// statelock's main_windows_test.go).
func TestMain(m *testing.M) {
	closeGate := sys.OpenGateForTest()
	restoreOwner, _ := sys.WineOwnerOnlyForTest()
	code := m.Run()
	restoreOwner()
	closeGate()
	os.Exit(code)
}
