package holdlog

import (
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

// On Windows the one clock all processes of a machine read alike is the
// performance counter: QueryPerformanceCounter counts from boot at the
// fixed frequency QueryPerformanceFrequency reports, the same for every
// process, and never goes back. It is also what Node's
// process.hrtime.bigint() reads there (libuv's uv_hrtime), so Go and
// TypeScript hold logs on one Windows machine order against each other as
// they do with CLOCK_MONOTONIC on Linux. Go's own monotonic reading is no
// substitute: time.Now exposes it only as differences within one process.
var (
	kernel32 = windows.NewLazySystemDLL("kernel32.dll")
	qpc      = kernel32.NewProc("QueryPerformanceCounter")
	qpf      = kernel32.NewProc("QueryPerformanceFrequency")

	freqOnce sync.Once
	freq     int64
	freqErr  error
)

// Now returns the performance counter in nanoseconds.
func Now() (int64, error) {
	freqOnce.Do(func() {
		if r, _, err := qpf.Call(uintptr(unsafe.Pointer(&freq))); r == 0 {
			freqErr = fmt.Errorf("holdlog: QueryPerformanceFrequency: %w", err)
		} else if freq <= 0 {
			freqErr = fmt.Errorf("holdlog: QueryPerformanceFrequency reported %d Hz", freq)
		}
	})
	if freqErr != nil {
		return 0, freqErr
	}
	var c int64
	if r, _, err := qpc.Call(uintptr(unsafe.Pointer(&c))); r == 0 {
		return 0, fmt.Errorf("holdlog: QueryPerformanceCounter: %w", err)
	}
	return ticksToNs(c, freq), nil
}

// ticksToNs converts c ticks of a freq Hz counter to nanoseconds without
// overflowing int64 for any uptime a machine reaches (c*1e9 would, after
// about 10 days at 10 MHz).
func ticksToNs(c, freq int64) int64 {
	return c/freq*1e9 + c%freq*1e9/freq
}
