package statelock

import "time"

// writtenBefore reports whether an mtime lies more than slack before boot:
// the power-loss rule's test, shared by the platforms that know when the
// current boot started (boot_linux.go, boot_darwin.go).
func writtenBefore(mtimeNs int64, boot time.Time, slack time.Duration) bool {
	return time.Unix(0, mtimeNs).Before(boot.Add(-slack))
}
