//go:build unix && !linux

package main

import (
	"os"
	"syscall"

	"github.com/exactfs/exactfs/internal/jobctl"
)

// selfExecutable is the running binary.
func selfExecutable() (string, error) { return os.Executable() }

// becomeSubreaper does nothing: there is no PR_SET_CHILD_SUBREAPER here, so
// an orphan of CMD's tree goes to init and out of the guard's reach, unless
// it stays in CMD's process group.
func becomeSubreaper() {}

func prepareGuardParent() {}

// guardAttr leaves the guard in exactfs's process group: without a
// subreaper, a guard of its own group would not reach what leaves CMD's.
func guardAttr() *syscall.SysProcAttr { return nil }

// cmdAttr puts CMD in a process group of its own, which the guard kills
// whole, unless exactfs runs in a terminal's foreground: there a group of its
// own would take CMD away from the terminal (a CMD reading it would stop,
// ^C and ^Z would miss it), so CMD stays in exactfs's group and the guard
// can kill CMD alone.
func cmdAttr(int) (attr *syscall.SysProcAttr, ownGroup bool) {
	if jobctl.InForeground() {
		return nil, false
	}
	return &syscall.SysProcAttr{Setpgid: true}, true
}

// descendants is empty: without a subreaper the guard reaches CMD's tree
// only through its process group.
func descendants() []int { return nil }

func signalDescendants(syscall.Signal) {}
