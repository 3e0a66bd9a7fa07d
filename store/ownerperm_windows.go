package store

import (
	"io/fs"
	"os"

	"github.com/exactfs/exactfs"
)

// ownerOnlyRecord is the one place that answers whether a record the store
// wrote owner-only (a data file, a lease record) still is (see its Unix
// twin). On Windows the mode says nothing about it: every file that is not
// read-only reports 0666, owner-only or not. Owner-only is the security
// descriptor, so the answer is exactfs.VerifyOwnerOnly on a handle of the
// file, which open gives (the caller's own descriptor for a lease; a
// no-follow open at the name for ReplaceExpected) and its closer; why is
// that refusal (acl_present, acl_unknown, owner_mismatch, or the failure
// to read the descriptor: every failure fails closed). mode is unused.
func ownerOnlyRecord(_ fs.FileMode, open func() (*os.File, func(), error)) (ok bool, why error) {
	f, closeFile, err := open()
	if err != nil {
		return false, err
	}
	defer closeFile()
	if err := exactfs.VerifyOwnerOnly(f); err != nil {
		return false, err
	}
	return true, nil
}
