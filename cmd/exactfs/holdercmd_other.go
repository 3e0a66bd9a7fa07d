//go:build !linux

package main

// holderCommand is "" where there is no /proc to read a holder's command
// line from.
func holderCommand(pid int64, startTime, format string) string { return "" }
