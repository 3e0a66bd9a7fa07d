//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly && !windows

package main

import "os"

// isTerminal reports false: without a terminal probe, the live progress
// lines stay off rather than writing control characters into a log file.
func isTerminal(*os.File) bool { return false }
