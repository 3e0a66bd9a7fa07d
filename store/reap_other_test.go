//go:build unix && (!linux || exactfs_portable)

package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/exactfs/exactfs"
)

// Where the kernel cannot tell whether a file is open (no lease probe:
// macOS, the BSDs), a staging file with bytes in it is never proved
// abandoned: the reaper keeps it and says why. Empty placeholders, inert
// whoever created them, are still removed.
func TestReapKeepsStagingWhereKernelCannotTell(t *testing.T) {
	s := newStore(t)
	staged := "." + "dest." + exactfs.NewUUID() + exactfs.ReplacementSuffix
	if err := os.WriteFile(filepath.Join(s.Path(), staged), []byte("bytes of a write that never committed"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := exactfs.PlaceholderPrefix + "1-2"
	if err := os.WriteFile(filepath.Join(s.Path(), empty), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := s.Reap(ReapMinAge(0))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Removed) != 1 || r.Removed[0] != empty {
		t.Fatalf("removed %v, want only the empty placeholder", r.Removed)
	}
	if len(r.Kept) != 1 || r.Kept[0].Path != staged || !strings.Contains(r.Kept[0].Reason, "cannot tell") {
		t.Fatalf("kept %+v, want %s kept because the kernel cannot tell", r.Kept, staged)
	}
}
