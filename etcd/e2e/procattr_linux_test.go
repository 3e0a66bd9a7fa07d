package e2e

import "syscall"

// childAttr makes a child process (a cluster member, a worker, a CLI under
// test) die with the test binary, so that a test killed by its -timeout
// leaves no member listening behind.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
