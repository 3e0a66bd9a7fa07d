package sys

import "testing"

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
