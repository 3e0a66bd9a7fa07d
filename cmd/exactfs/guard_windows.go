package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// guardArg is recognised on Windows too, and refused: there is no guard here
// (a Job object that kills CMD's tree with exactfs is yet to be written), so
// CMD is exactfs's own child and a CMD whose exactfs was killed keeps running
// after the lock is reclaimed.
const guardArg = "__exactfs-guard"

func runGuard([]string) int {
	fmt.Fprintln(os.Stderr, "exactfs: there is no guard process on Windows")
	return exitUsage
}

// start starts the command as exactfs's own child. A command that cannot be
// started is reported with the shell's statuses: 127 not found, 126 not
// executable.
func (c *child) start(e *env) (*running, error) {
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.stdin, c.stdout, c.stderr
	cmd.Env = append(os.Environ(), c.env...)
	if err := cmd.Start(); err != nil {
		status := exitCannotExec
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			status = exitNotFound
		}
		fmt.Fprintf(e.stderr, "exactfs: cannot run %s: %v\n", c.argv[0], err)
		return nil, exitStatus(status)
	}
	return &running{cmd: cmd, signal: func(s os.Signal) { forward(cmd.Process, s) }}, nil
}
