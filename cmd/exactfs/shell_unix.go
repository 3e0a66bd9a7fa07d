//go:build unix

package main

// shellArgv is the command -c runs: the string as one argument of
// /bin/sh -c, which parses it as the shell does.
func shellArgv(s string) ([]string, error) { return []string{"/bin/sh", "-c", s}, nil }
