//go:build !linux && !darwin

package probe

import (
	"fmt"
	"syscall"
)

func fsType(int) (string, bool) { return "unknown (not probed on this platform)", false }

func probeACL(int) Result { return Result{false, "not probed on this platform"} }

func probeOFD(int, int) Result { return Result{false, "not probed on this platform"} }

func isNotSupported(syscall.Errno) bool { return false }

func errnoName(en syscall.Errno) string { return fmt.Sprintf("errno %d", int(en)) }
