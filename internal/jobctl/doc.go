// Package jobctl answers the two questions about the terminal that a
// command running another command (exactfs lock and update, exactfs-etcd)
// must ask before it forwards a signal: is this process in the foreground
// process group of its terminal, and so did a keyboard signal (^C, ^\) reach
// the child already, from the terminal itself; and is an output stream a
// terminal that the live progress lines may draw on.
//
// A signal the terminal sends goes to its whole foreground process group,
// the child included when it shares ours. Sending the child a second copy
// could cut short the graceful exit the first one began, so such a signal is
// not forwarded. Any other signal (a kill(1) that named our pid, a
// supervisor's SIGTERM, a SIGINT while we are a background job) reached
// only us, and is forwarded.
//
// The answers come from one ioctl each, per platform: foreground_unix.go
// (TIOCGPGRP), foreground_other.go (no process groups: always "aimed at
// us"), terminal_linux.go (TCGETS), terminal_bsd.go (TIOCGETA),
// terminal_windows.go (a console that takes escape sequences) and
// terminal_other.go (no probe: not a terminal).
package jobctl
