package store

import (
	"fmt"
	"path/filepath"

	"github.com/exactfs/exactfs"
)

// replaceFence replaces the fence counter name in d with data if it is
// still the file captured as id. Windows has no rename exchange, so
// exactfs.ReplaceExpected refuses (atomic_unavailable). Here the counter
// is compared once more and then replaced atomically (WriteFile: old
// bytes or new, never torn): the reference's portable compare-and-swap,
// which is exact only under a held lease. It is held: only a lease's
// holder writes its counter, in AcquireLease, after it created the lock
// file and before it returns (see Fence), so no other writer can come
// between the compare and the replace. A holder judged gone while it
// still wrote (a live process is never judged gone) is what the compare
// catches where it can.
func replaceFence(d *exactfs.Dir, name string, data []byte, id exactfs.Identity) error {
	_, have, err := d.CaptureRecord(name)
	if err != nil {
		return err
	}
	if !have.SameContent(id) {
		return fmt.Errorf("%s changed since it was read: %w", filepath.Join(d.Name(), name), exactfs.ErrIdentityMismatch)
	}
	_, err = d.WriteFile(name, data, 0o600, exactfs.ExactPerm())
	return err
}
