//go:build !linux && !darwin

package liveness

import (
	"fmt"
	"runtime"
	"time"
)

const bootSlack = 0

func bootTime() (time.Time, error) {
	return time.Time{}, fmt.Errorf("liveness: boot time is %w on %s", errUnsupported, runtime.GOOS)
}
