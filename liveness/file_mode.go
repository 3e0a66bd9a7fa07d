//go:build !windows

package liveness

import (
	"fmt"

	"github.com/exactfs/exactfs"
)

// mkdirOwnerOnly makes the directory name beneath d with mode 0700,
// exactly (exactfs sets it through a descriptor, whatever the umask), so
// it is owner-only from its creation: mkdir(2) never gives more than
// the mode asked for.
func mkdirOwnerOnly(d *exactfs.Dir, name string) error {
	return d.Mkdir(name, 0o700)
}

// sealSecret has nothing to do here: Publish gave the secret exactly 0600
// before it had its name.
func sealSecret(*exactfs.Dir, string) error { return nil }

// checkConfigRoot applies checkConfigRootMode to the directory d is bound
// to, as it is now.
func checkConfigRoot(dir string, d *exactfs.Dir) error {
	id, err := d.Stat()
	if err != nil {
		return fmt.Errorf("liveness: config root: %w", err)
	}
	return checkConfigRootMode(dir, id.Mode)
}
