//go:build !linux

package idle

import "os"

// unopened cannot ask the kernel here: no file leases.
func unopened(*os.File) (string, error) {
	return "the kernel cannot tell whether it is open on this system", nil
}

func noWriter(*os.File) (string, error) {
	return "the kernel cannot tell whether it is open for writing on this system", nil
}
