//go:build unix

package main

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

var relayedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

func signalNumber(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return int(n)
	}
	return int(syscall.SIGINT)
}

// deliveredByTerminal reports whether s is a keyboard signal (^C, ^\) that
// the terminal sent to our whole foreground process group, command included.
func deliveredByTerminal(s os.Signal) bool {
	return (s == syscall.SIGINT || s == syscall.SIGQUIT) && inForeground()
}

// inForeground reports whether this process's group is the foreground
// process group of the terminal on stdin, stdout or stderr.
func inForeground() bool {
	for fd := 0; fd <= 2; fd++ {
		if pgrp, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err == nil {
			return pgrp == unix.Getpgrp()
		}
	}
	return false
}

// signaledWith reports the signal that killed a finished process.
func signaledWith(ps *os.ProcessState) (int, bool) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return int(ws.Signal()), true
	}
	return 0, false
}
