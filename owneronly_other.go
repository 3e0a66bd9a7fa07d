//go:build !unix && !windows

package exactfs

import (
	"os"
)

// Windows security descriptors are not POSIX modes; until the store can
// prove an owner-only DACL, it fails closed.

func ownerOnly(op string, f *os.File, apply bool) error {
	return ownerErr(op, f.Name(), CodeACLUnavailable, "owner-only security cannot be proved on this platform; refusing", nil)
}
