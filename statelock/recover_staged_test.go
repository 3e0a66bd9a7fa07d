//go:build (!linux || exactfs_portable) && !windows

package statelock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
)

// Off Linux createFallback stages our new records under a lock quarantine
// name, so Recover's reason for such a file must not call every one of them
// the leftover of an exact unlink: an unreleased exactfs record (boot_id)
// or an empty one reads as staged by a creator that died before publishing
// it; a tombstone, which nobody stages, still reads as detached. Fails on
// the old message ("detached by an interrupted exact unlink" for all).
func TestRecoverNamesStagedRecord(t *testing.T) {
	e := newEnv(t)
	staged := tombstone("staged", e.host.ID)
	staged.Released = false
	staged.Pid, staged.StartTime = 999999, "unknown"
	staged.BootID = "00000000-0000-4000-8000-0000000000bb"
	files := map[string]struct {
		data []byte
		want string
	}{
		exactfs.LockQuarantinePrefix + "00000000-0000-4000-8000-000000000001.json": {staged.Encode(), "staged by a creator that died before publishing it"},
		exactfs.LockQuarantinePrefix + "00000000-0000-4000-8000-000000000002.json": {nil, "staged by a creator that died before writing and publishing it"},
		exactfs.LockQuarantinePrefix + "00000000-0000-4000-8000-000000000003.json": {tombstone("t", e.host.ID).Encode(), "detached by an interrupted exact unlink"},
	}
	old := time.Now().Add(-20 * time.Minute)
	for name, f := range files {
		p := filepath.Join(e.dir, name)
		if err := os.WriteFile(p, f.data, 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old, old)
	}
	acts, err := Recover(e.state, true, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, a := range acts {
		f, ok := files[filepath.Base(a.Path)]
		if !ok {
			continue
		}
		seen++
		if !strings.Contains(a.Evidence, f.want) {
			t.Errorf("%s: evidence %q, want it to say %q", filepath.Base(a.Path), a.Evidence, f.want)
		}
	}
	if seen != len(files) {
		t.Fatalf("Recover named %d of the %d quarantined files: %+v", seen, len(files), acts)
	}
}
