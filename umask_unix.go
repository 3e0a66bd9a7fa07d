//go:build unix

package exactfs

import (
	"io/fs"
	"syscall"
)

// startUmask is the file mode creation mask of the process when this
// package was initialized. umask(2) reads the mask only by setting it, so
// it is read once, during package initialization, before any goroutine of
// the program could be creating a file in the instant the mask is 0.
var startUmask = func() fs.FileMode {
	m := syscall.Umask(0o077)
	syscall.Umask(m)
	return fs.FileMode(m) & fs.ModePerm
}()
