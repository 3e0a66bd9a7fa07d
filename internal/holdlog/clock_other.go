//go:build !(linux || darwin || windows)

package holdlog

import (
	"errors"
	"runtime"
)

// Now is unavailable here: there is no CLOCK_MONOTONIC that other processes
// can read the same way.
func Now() (int64, error) {
	return 0, errors.New("holdlog: no CLOCK_MONOTONIC on " + runtime.GOOS)
}
