//go:build !unix

package store

import (
	"os"

	"github.com/exactfs/exactfs"
)

// Windows security descriptors are not POSIX modes; until the store can
// prove an owner-only DACL, it fails closed.

func ownerOnly(op string, f *os.File, apply bool) error {
	return newErr(op, f.Name(), CodeACLUnavailable, "owner-only security cannot be proved on this platform; refusing", nil)
}

func dirFile(at *os.File, path string, d *exactfs.Dir) (*os.File, error) {
	return nil, newErr("open", path, exactfs.CodeUnsupported, "unsupported on this platform", nil)
}
