package main

import "syscall"

// childAttr makes the kernel SIGKILL the command if exactfs itself dies (even
// by SIGKILL, which it cannot catch): the lock of a dead exactfs is reclaimed
// by the next caller, and the command must not go on running unlocked.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
