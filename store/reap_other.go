//go:build !linux

package store

import (
	"os"

	"github.com/exactfs/exactfs"
)

// inspectResidue captures name's identity. This platform has no way to
// prove that no process has a file open, so a non-empty staging file is
// never proved abandoned.
func inspectResidue(d *exactfs.Dir, name string, askIdle bool) (exactfs.Identity, string, error) {
	f, err := d.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return exactfs.Identity{}, "", err
	}
	defer f.Close()
	_, id, err := exactfs.CaptureFile(f)
	idle := ""
	if askIdle {
		idle = "this platform cannot prove that no process has it open"
	}
	return id, idle, err
}
