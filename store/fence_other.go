//go:build !windows

package store

import "github.com/exactfs/exactfs"

// replaceFence replaces the fence counter name in d with data if it is
// still the file captured as id: an exact compare-and-swap
// (exactfs.ReplaceExpected), which needs no lock of the caller's.
func replaceFence(d *exactfs.Dir, name string, data []byte, id exactfs.Identity) error {
	_, err := d.ReplaceExpected(name, data, id)
	return err
}
