//go:build unix

package main

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// fromTerminal says whether s is a keyboard signal that the terminal sent
// to our whole foreground process group, CMD included.
func fromTerminal(s os.Signal) bool {
	if s != syscall.SIGINT && s != syscall.SIGQUIT {
		return false
	}
	for fd := 0; fd <= 2; fd++ {
		if fg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err == nil {
			return fg == unix.Getpgrp()
		}
	}
	return false
}
