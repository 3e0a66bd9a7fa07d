//go:build linux

package holdlog

import "golang.org/x/sys/unix"

// Now returns CLOCK_MONOTONIC in nanoseconds: the clock that Node's
// process.hrtime.bigint() reads on Linux, so Go and TypeScript events order
// correctly against each other.
func Now() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}
