//go:build !linux

package main

import "syscall"

// childAttr is nil: without PR_SET_PDEATHSIG, a command whose exactfs was
// killed with SIGKILL keeps running after the lock is reclaimed. Kill
// exactfs with SIGTERM, which it forwards, to stop both.
func childAttr() *syscall.SysProcAttr { return nil }
