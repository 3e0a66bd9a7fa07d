//go:build !unix

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// runBackend runs the backend command as a child with the same arguments
// and streams (there is no exec(2) here), and passes its status through.
func runBackend(e *env, path string, args []string) int {
	cmd := exec.Command(path, args...)
	cmd.Args[0] = os.Args[0] // exactfs-etcd names itself after argv[0] in messages
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	fmt.Fprintf(e.stderr, "exactfs %s: cannot run %s: %v\n", args[0], path, err)
	return exitCannotExec
}
