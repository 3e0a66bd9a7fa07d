package main

import "runtime"

// The demo's words for what it does differ by platform, and its table
// says what was really done: on Windows a worker is killed with
// TerminateProcess (os.Process.Kill there; Windows has no signals, and
// the process gets no chance to run anything, as with SIGKILL), and the
// hold intervals come from QueryPerformanceCounter (internal/holdlog's
// clock there, one counter for every process of the machine).
var (
	demoKill  = "SIGKILL"
	demoClock = "CLOCK_MONOTONIC"
)

func init() {
	if runtime.GOOS == "windows" {
		demoKill, demoClock = "TerminateProcess", "QueryPerformanceCounter"
	}
}
