//go:build unix

package main

import (
	"io/fs"
	"syscall"
)

// rootOwned reports whether fi, from Lstat, belongs to uid 0.
func rootOwned(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == 0
}
