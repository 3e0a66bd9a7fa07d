package sys

import (
	"testing"

	"golang.org/x/sys/windows"
)

// OpenGateForTest opens the gate (see ready) for the rest of the process
// and returns the function that puts it back as it was. It exists so that
// the tests of a package above this one (the root package's Windows path
// rules and exact primitives) can prove that package's Windows code under
// Wine while every program built from the module keeps failing closed: it
// panics unless the process is a test binary (testing.Testing), so no
// release build can reach it. Nothing but a _test.go file may call it.
func OpenGateForTest() (restore func()) { return setGateForTest(true) }

// CloseGateForTest shuts the gate, as it is in every program, for a test
// that checks the fail-closed refusal inside a test binary that opened it.
func CloseGateForTest() (restore func()) { return setGateForTest(false) }

func setGateForTest(open bool) func() {
	if !testing.Testing() {
		panic("sys: the Windows gate may only be changed by a test binary")
	}
	was := ready
	ready = open
	return func() { ready = was }
}

// wineOwnerOnly is set by WineOwnerOnlyForTest: OwnerOnly and
// MakeOwnerOnly check the owner only.
var wineOwnerOnly = false

// WineOwnerOnlyForTest lets a test of a package above this one run, under
// Wine, code that needs an owner-only object (the store opens nothing
// else). Wine keeps no DACL: SetSecurityInfo succeeds and nothing is
// kept, and every object reads back a synthesized DACL that lets SYSTEM
// and Everyone in, so OwnerOnly refuses everything there and nothing
// above it can run. While the substitute is on, OwnerOnly and
// MakeOwnerOnly prove the owner alone (the current user, which Wine
// reports for every object) and skip the DACL, which nothing under Wine
// can prove; the DACL rules keep their own tests (security_windows_test.go,
// the store's TestWindowsOwnerOnly*), which never turn it on.
//
// It changes nothing on real Windows, where the real DACL check runs:
// active is false there, and the caller's test then proves the DACL as
// well. It panics unless the process is a test binary. restore puts the
// check back; nothing but a _test.go file may call it.
func WineOwnerOnlyForTest() (restore func(), active bool) {
	if !testing.Testing() {
		panic("sys: the Wine owner-only substitute may only be turned on by a test binary")
	}
	if !underWine() {
		return func() {}, false
	}
	was := wineOwnerOnly
	wineOwnerOnly = true
	return func() { wineOwnerOnly = was }, true
}

// underWine reports whether the process runs under Wine, whose ntdll
// exports wine_get_version and Windows' does not.
func underWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}

// unsupportedText is ErrUnsupported's text on Windows.
func unsupportedText() string {
	return "unsupported on windows: exactfs fails closed rather than risk another process's file"
}
