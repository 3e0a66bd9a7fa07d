package statelock

import (
	"time"

	"github.com/exactfs/exactfs/liveness"
)

// writtenBeforeBoot reports whether an mtime lies before the current boot
// (the power-loss rule's test, verdict.go); ok is false where the boot
// time is unknown (liveness.BootTime: every platform but Linux and macOS),
// and the rule is off there.
func writtenBeforeBoot(mtimeNs int64) (before, ok bool) {
	boot, slack, err := liveness.BootTime()
	if err != nil {
		return false, false
	}
	return writtenBefore(mtimeNs, boot, slack), true
}

// writtenBefore reports whether an mtime lies more than slack before boot.
func writtenBefore(mtimeNs int64, boot time.Time, slack time.Duration) bool {
	return time.Unix(0, mtimeNs).Before(boot.Add(-slack))
}
