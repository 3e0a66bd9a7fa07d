//go:build !linux && !darwin

package liveness

import (
	"errors"
	"testing"
)

// TestBootTimeUnsupported: where no boot time is known, BootTime says so
// with errors.ErrUnsupported, and statelock's power-loss rule is off.
func TestBootTimeUnsupported(t *testing.T) {
	if _, _, err := BootTime(); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("BootTime: %v, want errors.ErrUnsupported", err)
	}
}
