//go:build !windows

package sys

import "runtime"

// unsupportedText is ErrUnsupported's text.
func unsupportedText() string {
	return "unsupported on " + runtime.GOOS + ": exactfs fails closed rather than risk another process's file"
}
