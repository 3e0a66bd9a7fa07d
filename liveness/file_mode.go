//go:build !windows

package liveness

import (
	"fmt"
	"io/fs"

	"github.com/exactfs/exactfs"
)

// chmodDir sets the mode of the directory d through a descriptor of it.
func chmodDir(d *exactfs.Dir, mode fs.FileMode) error {
	f, err := d.File()
	if err != nil {
		return fmt.Errorf("liveness: creating config root: %w", err)
	}
	defer f.Close()
	if err := f.Chmod(mode); err != nil {
		return fmt.Errorf("liveness: creating config root: %w", err)
	}
	return nil
}

// checkConfigRoot applies checkConfigRootMode to the directory d is bound
// to, as it is now.
func checkConfigRoot(dir string, d *exactfs.Dir) error {
	id, err := d.Stat()
	if err != nil {
		return fmt.Errorf("liveness: config root: %w", err)
	}
	return checkConfigRootMode(dir, id.Mode)
}
