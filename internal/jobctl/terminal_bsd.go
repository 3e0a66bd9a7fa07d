//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package jobctl

import (
	"os"

	"golang.org/x/sys/unix"
)

// IsTerminal reports whether f is a terminal: TIOCGETA, the BSDs' name for
// Linux's TCGETS, succeeds only on one.
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TIOCGETA)
	return err == nil
}
