package sys

import (
	"fmt"
	"testing"

	"golang.org/x/sys/windows"
)

// The opt-in that opens the gate in a program: OptInEnv set to exactly
// OptInValue (no other spelling, case or spacing), read once when the
// process starts. The value names what the user accepts: exactfs's Windows
// code verified under Wine 8 only, with the parts Wine cannot show (listed
// in README.md's Windows section and in .ci/wine/needs-real-windows.md)
// not verified at all. A variable that merely exists, or a value such as
// "1", "true" or "yes" that a script might set for another reason, keeps
// the gate shut.
const (
	OptInEnv   = "EXACTFS_WINDOWS"
	OptInValue = "unverified"
	// OptInDoc is where a user reads what the opt-in accepts.
	OptInDoc = `README.md, "Windows: the opt-in, and what only Wine has verified"`
)

// gateFromEnv decides the gate from the environment (lookup is
// os.LookupEnv): open only for OptInEnv=OptInValue exactly, and why in
// words, as doctor and the refusal show it.
func gateFromEnv(lookup func(string) (string, bool)) (open bool, why string) {
	v, set := lookup(OptInEnv)
	switch {
	case !set:
		return false, OptInEnv + " is not set"
	case v == OptInValue:
		return true, OptInEnv + "=" + OptInValue + " is set: the user accepts what is verified under Wine only"
	}
	const show = 40
	if len(v) > show {
		v = v[:show] + "..."
	}
	return false, fmt.Sprintf("%s is %q, not exactly %q", OptInEnv, v, OptInValue)
}

// OpenGateForTest opens the gate (see ready) for the rest of the process
// and returns the function that puts it back as it was. It exists so that
// the tests of a package above this one (the root package's Windows path
// rules and exact primitives) can prove that package's Windows code under
// Wine whether or not the opt-in is set: it panics unless the process is
// a test binary (testing.Testing), so no release build can reach it.
// Nothing but a _test.go file may call it.
func OpenGateForTest() (restore func()) { return setGateForTest(true) }

// CloseGateForTest shuts the gate, as it is in every program without the
// opt-in, for a test that checks the fail-closed refusal inside a test
// binary that opened it.
func CloseGateForTest() (restore func()) { return setGateForTest(false) }

func setGateForTest(open bool) func() {
	if !testing.Testing() {
		panic("sys: the Windows gate may only be changed by a test binary")
	}
	was, wasWhy := ready, gateWhy
	ready = open
	if open {
		gateWhy = "opened by a test binary (OpenGateForTest)"
	} else {
		gateWhy = "shut by a test binary (CloseGateForTest)"
	}
	return func() { ready, gateWhy = was, wasWhy }
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

// unsupportedText is ErrUnsupported's text on Windows. While the gate is
// shut it says why and names the opt-in, because that refusal is what
// every operation of every program says on Windows until the user opts
// in; once it is open, what still refuses (a 128-bit file id, Fchown) is
// a real limit, and the text says only that.
func unsupportedText() string {
	if ready {
		return "unsupported on windows: exactfs fails closed rather than risk another process's file"
	}
	return "exactfs fails closed on Windows (" + gateWhy + "): its Windows support is verified under Wine only, " +
		"not on a real Windows machine; to accept that, set " + OptInEnv + "=" + OptInValue +
		" (" + OptInDoc + ", lists what is not verified)"
}
