//go:build !linux || exactfs_portable

package statelock

import (
	"bytes"
	"os"

	"github.com/exactfs/exactfs"
)

// writtenIdentity re-captures the record through f where there is no
// cheaper exact fstat here.
func writtenIdentity(f *os.File, data []byte) (exactfs.Identity, error) {
	got, id, err := exactfs.CaptureRecordFile(f)
	if err != nil {
		return exactfs.Identity{}, err
	}
	if !bytes.Equal(got, data) {
		return exactfs.Identity{}, errRecordChanged
	}
	return id, nil
}

// readHeld is exactfs.CaptureFile here.
func readHeld(f *os.File) ([]byte, exactfs.Identity, error) { return exactfs.CaptureRecordFile(f) }

// readHeldAfter is readHeld (the fstat st is of no use here).
func readHeldAfter(f *os.File, _ exactfs.RawStat) ([]byte, exactfs.Identity, error) {
	return exactfs.CaptureRecordFile(f)
}
