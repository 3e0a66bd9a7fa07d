//go:build unix

package exactfs

import (
	"io/fs"
	"syscall"
)

// rootOwned reports whether fi, from os.Lstat, belongs to uid 0.
func rootOwned(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == 0
}
