//go:build unix && !linux

package e2e

import "syscall"

// childAttr: there is no parent-death signal off Linux (macOS, the BSDs),
// so children are ended only by the tests' cleanups; a test binary killed
// by its -timeout can leave cluster members behind.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
