//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly && !windows

package jobctl

import "os"

// IsTerminal reports false: without a terminal probe, the live progress
// lines stay off rather than writing control characters into a log file.
func IsTerminal(*os.File) bool { return false }
