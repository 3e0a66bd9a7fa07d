//go:build unix

package exactfs

import (
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/exactfs/exactfs/internal/testfs"
)

// Probe works beneath the Dir's descriptor, reports what a local Linux
// filesystem supports, and leaves nothing behind; a closed Dir is refused.
func TestDirProbe(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/keep", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := testfs.Tree(t, dir)
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := d.Probe()
	if err != nil {
		t.Fatal(err)
	}
	if r.Dir != dir || r.FSType == "" || !r.RenameNoReplace.Supported || !r.HardLink.Supported {
		t.Fatalf("report %+v", r)
	}
	if after := testfs.Tree(t, dir); !slices.Equal(before, after) {
		t.Fatalf("the probe left %v (before %v)", after, before)
	}
	d.Close()
	if _, err := d.Probe(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Probe on a closed Dir: %v", err)
	}
}
