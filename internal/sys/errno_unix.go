//go:build unix

package sys

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrnoName is the symbolic name of en ("EINVAL"), or "" when unknown.
func ErrnoName(en syscall.Errno) string { return unix.ErrnoName(en) }
