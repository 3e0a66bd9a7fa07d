//go:build unix

package main

import (
	"fmt"
	"os"
	"syscall"
)

// runBackend replaces this process with the backend command: it gets the
// same arguments, environment, descriptors and process id, so signals,
// exit status and lock ownership are its own. Its argv[0] is the name this
// command was run by, so that its messages name the command the user typed
// (exactfs-etcd takes its program name from argv[0]).
func runBackend(e *env, path string, args []string) int {
	err := syscall.Exec(path, append([]string{os.Args[0]}, args...), os.Environ())
	fmt.Fprintf(e.stderr, "exactfs %s: cannot run %s: %v\n", args[0], path, err)
	return exitCannotExec
}
