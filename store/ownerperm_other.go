//go:build !windows

package store

import (
	"io/fs"
	"os"
)

// ownerOnlyRecord is the one place that answers whether a record the store
// wrote owner-only (a data file, a lease record) still is, for the checks
// made while the store uses it: before ReplaceExpected hands its mode on to
// a successor, and at every fencing check of a lease. Here owner-only is
// the mode: exactly 0600, read from the capture the caller already made
// (mode), so no descriptor is opened (open is not called) and why is
// always nil; the caller names the mode it found. Who owns the file and
// its ACLs are proved where the file is created and opened
// (ApplyOwnerOnly, VerifyOwnerOnly), not again here.
func ownerOnlyRecord(mode fs.FileMode, _ func() (*os.File, func(), error)) (ok bool, why error) {
	return mode.Perm() == 0o600, nil
}
