//go:build !unix

package jobctl

import "os"

// FromTerminal reports false: without POSIX process groups there is no
// foreground group to have been sent the signal. (A Windows console's
// Ctrl-C does reach every process attached to it, but Go reports it as the
// same os.Interrupt a program's GenerateConsoleCtrlEvent gives, so it is
// taken as aimed at us and the caller decides what forwarding means.)
func FromTerminal(os.Signal) bool { return false }

// InForeground reports false: there is no terminal foreground process
// group here to be in.
func InForeground() bool { return false }
