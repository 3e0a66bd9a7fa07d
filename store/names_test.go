package store

import (
	"testing"

	"github.com/exactfs/exactfs"
)

// TestListHidesDirLock: List shows data, not the file a directory's commit
// lock is taken on where directories take no lock (Windows), nor crash
// residue; other private names stay visible, as they always have.
func TestListHidesDirLock(t *testing.T) {
	for name, hidden := range map[string]bool{
		exactfs.DirLockName:                      true,
		exactfs.StoreRetireName():                true,
		"data.json":                              false,
		exactfs.FenceLeaseName("jobs") + ".lock": false,
		".gjc-future":                            false,
	} {
		if got := isPrivateName(name); got != hidden {
			t.Errorf("isPrivateName(%q) = %v, want %v", name, got, hidden)
		}
	}
}
