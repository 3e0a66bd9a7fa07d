//go:build !linux && !darwin

package exactfs

import (
	"fmt"
	"syscall"
)

func fsType(int) (string, bool) { return "unknown (not probed on this platform)", false }

func probeACL(int) ProbeResult { return ProbeResult{false, "not probed on this platform"} }

func probeOFD(int, int) ProbeResult { return ProbeResult{false, "not probed on this platform"} }

func isNotSupported(syscall.Errno) bool { return false }

func errnoName(en syscall.Errno) string { return fmt.Sprintf("errno %d", int(en)) }
