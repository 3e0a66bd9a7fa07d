//go:build !linux && !darwin && !windows

package liveness

import (
	"fmt"
	"runtime"
)

// MachineID is unsupported on this platform: there is no machine id source
// that the TypeScript peers would read the same way.
func MachineID() (string, error) {
	return "", fmt.Errorf("liveness: machine id is unsupported on %s; use FixedHostIdentity", runtime.GOOS)
}
