//go:build linux

package exactfs

import (
	"os"
	"testing"

	"github.com/exactfs/exactfs/internal/sys"
)

// TestProbeKernel: on this Linux the waker is inotify and a file created in
// the directory wakes it, and the lease probe answers both ways; in the
// portable build neither exists, and the report says so rather than
// guessing. The probe leaves nothing behind.
func TestProbeKernel(t *testing.T) {
	dir := t.TempDir()
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r, err := d.ProbeKernel()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", r)
	if r.Portable != sys.Portable {
		t.Errorf("Portable = %v in a build where it is %v", r.Portable, sys.Portable)
	}
	if sys.Portable {
		if r.Waker != "timed backoff" || r.Wake.Supported || r.OpenFiles.Supported {
			t.Errorf("portable build: want a timed backoff and no lease probe, got %+v", r)
		}
	} else {
		if r.Waker != "inotify" || !r.Wake.Supported {
			t.Errorf("want a working inotify waker on Linux, got %q %+v", r.Waker, r.Wake)
		}
		if !r.OpenFiles.Supported {
			t.Errorf("want the lease probe to answer on %s, got %+v", dir, r.OpenFiles)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("ProbeKernel left %v in %s", ents, dir)
	}
}
