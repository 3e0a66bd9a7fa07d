//go:build unix

package jobctl

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// FromTerminal reports whether s is a keyboard signal (SIGINT from ^C,
// SIGQUIT from ^\) that the terminal sent to our whole foreground process
// group, and so to a child that shares the group. Only those two come from
// the keyboard; any other signal is reported as not the terminal's. In the
// foreground, a kill(1) of our pid alone with SIGINT looks the same as ^C
// and is taken for it: ^C is by far the more common.
func FromTerminal(s os.Signal) bool {
	return (s == syscall.SIGINT || s == syscall.SIGQUIT) && InForeground()
}

// InForeground reports whether this process's group is the foreground
// process group of its controlling terminal, as found on stdin, stdout or
// stderr: TIOCGPGRP (tcgetpgrp) fails with ENOTTY on a descriptor that is
// not a terminal and on a terminal that is not this process's controlling
// terminal, so the first of them that answers is the controlling terminal.
// With none of them on it (all three redirected, or no controlling
// terminal, as under a supervisor) it reports false.
//
// Both numbers are read in this process's pid namespace. Where the group
// leader is outside it ("unshare --pid --fork exactfs ...") getpgrp(2) gives
// 0, and so does TIOCGPGRP for a foreground group outside it: 0 == 0 is
// taken as in the foreground, which is right for the foreground job such a
// command is when typed in a shell.
func InForeground() bool {
	for fd := 0; fd <= 2; fd++ {
		if pgrp, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err == nil {
			return pgrp == unix.Getpgrp()
		}
	}
	return false
}
