package liveness

import (
	"os"
	"testing"

	"github.com/exactfs/exactfs/internal/sys"
)

// openPlatform opens internal/sys's gate for one test (every program keeps
// it shut, so the config root and the secret refuse there) and, under
// Wine only, the owner-only substitute (sys.WineOwnerOnlyForTest): Wine
// keeps no DACL and shows every object one that lets SYSTEM and Everyone
// in, so without it no config root is owner-only there. Under Wine the
// tests that call it therefore prove the owner alone; on real Windows the
// substitute is off and they prove the protected owner-only DACL too.
func openPlatform(t testing.TB) {
	t.Helper()
	closeGate := sys.OpenGateForTest()
	restore, wine := sys.WineOwnerOnlyForTest()
	if wine {
		t.Log("under Wine: owner-only is proved by the owner alone (Wine keeps no DACL; see .ci/wine/needs-real-windows.md)")
	}
	t.Cleanup(func() { restore(); closeGate() })
}

// openPlatformForHelper is openPlatform for a helper process (see
// TestMain), which runs no test and exits when it is done.
func openPlatformForHelper() {
	sys.OpenGateForTest()
	sys.WineOwnerOnlyForTest()
}

// ownerOnlyTestDir makes the existing directory dir owner-only the Windows
// way (sys.MakeOwnerOnly: a protected DACL for the user alone; under Wine,
// with openPlatform's substitute, the owner is proved and nothing is
// written): a directory t.TempDir or os.Mkdir made inherits its parent's
// DACL, which lets SYSTEM and Administrators in. Files created inside it
// afterwards inherit its one entry. Needs openPlatform first.
func ownerOnlyTestDir(t testing.TB, dir string) {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := sys.MakeOwnerOnly(int(f.Fd()), true); err != nil {
		t.Fatalf("making %s owner-only: %v", dir, err)
	}
}
