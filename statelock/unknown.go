package statelock

import (
	"os"

	"github.com/exactfs/exactfs"
)

// Variables for tests: the kernel's answers as where it cannot tell (no OFD
// locks, no lease probe: macOS, the BSDs, a filesystem without them), so
// that the rules that must keep on "unknown" run on Linux.
var (
	ofdUnknown    = false // heldOnIt: not known
	writerUnknown = false // writerOf: Unknown
)

// heldOnIt is ofdHeld as Recover asks it (ofdUnknown).
func heldOnIt(f *os.File) (held, known bool) {
	if ofdUnknown {
		return false, false
	}
	return ofdHeld(f)
}

// writerOf is exactfs.ProbeWriter as the abandoned-write rule and Recover ask it
// (writerUnknown).
func writerOf(f *os.File) (exactfs.Answer, string) {
	if writerUnknown {
		return exactfs.AnswerUnknown, "the kernel cannot tell whether it is open on this system"
	}
	return exactfs.ProbeWriter(f)
}
