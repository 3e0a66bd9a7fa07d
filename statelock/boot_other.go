//go:build !linux && !darwin

package statelock

// writtenBeforeBoot cannot be answered here; the power-loss rule is off.
func writtenBeforeBoot(int64) (before, ok bool) { return false, false }
