package jobctl

import (
	"os"

	"golang.org/x/sys/windows"
)

// IsTerminal reports whether f is a console that understands the escape
// sequences the live progress lines write ("\r\033[K"): GetConsoleMode
// succeeds only on a console handle, and the console must accept
// ENABLE_VIRTUAL_TERMINAL_PROCESSING (Windows 10 and later), which this
// turns on for the rest of the process. A file, a pipe (a CI log, a
// redirect) or an older console that refuses the mode gets no progress
// lines rather than raw control characters.
func IsTerminal(f *os.File) bool {
	h := windows.Handle(f.Fd())
	var mode uint32
	if windows.GetConsoleMode(h, &mode) != nil {
		return false
	}
	if mode&windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING != 0 {
		return true
	}
	return windows.SetConsoleMode(h, mode|windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING) == nil
}
