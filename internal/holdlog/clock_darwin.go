package holdlog

import "golang.org/x/sys/unix"

// Now returns CLOCK_UPTIME_RAW in nanoseconds: mach_absolute_time, the
// clock Node's process.hrtime.bigint() reads on macOS, so Go and TypeScript
// events order correctly against each other. CLOCK_MONOTONIC would not do
// there: it keeps counting while the machine sleeps and Node's clock does
// not, so the two drift apart by every sleep since boot.
func Now() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_UPTIME_RAW, &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}
