package main

import "syscall"

// childAttr kills CMD with us: a lock holder killed by SIGKILL must not
// leave CMD running without the lock.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
