//go:build !unix

package main

// makeStateDirForOwner: there is no root whose directories would lock a
// user out; the library makes the directory.
func makeStateDirForOwner(stateFile string) {}
