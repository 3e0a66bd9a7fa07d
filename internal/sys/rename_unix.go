//go:build unix && !(linux && amd64)

package sys

import "golang.org/x/sys/unix"

// renameat is unix.Renameat (rename_linux_amd64.go says why amd64 Linux
// has its own).
func renameat(olddir int, oldname string, newdir int, newname string) error {
	return unix.Renameat(olddir, oldname, newdir, newname)
}
