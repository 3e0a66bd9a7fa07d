//go:build !unix

package store

import (
	"os"

	"github.com/exactfs/exactfs"
)

func fileInode(f *os.File) (exactfs.Identity, error) {
	return exactfs.Identity{}, newErr("stat", f.Name(), exactfs.CodeUnsupported, "unsupported on this platform", nil)
}

func lockDir(d *exactfs.Dir) (func(), error) {
	return nil, newErr("lock", d.Name(), exactfs.CodeUnsupported, "unsupported on this platform", nil)
}
