//go:build linux

package statelock

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/internal/testfs"
)

// rchar is this process's count of bytes read by system calls
// (/proc/self/io): a byte count, not a timing.
func rchar(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skipf("no /proc/self/io: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Skip("no rchar in /proc/self/io")
	return 0
}

// TestAdversaryPlantedHugeResidueNotRead: in a shared sticky directory uid
// B plants one 1 GiB sparse file named like uid A's crash residue of the
// state file (.s.json.<uuid>.replacement). Every process's first
// acquisition sweeps residue under the lock, and the sweep captures each
// candidate whole (liveness.Reclaim with AnySize) before it judges it, so
// A's lock reads B's gigabyte while holding the lock: every exactfs update
// of A took 22 s and 2.6 GB of RSS, holding the lock all that time (status:
// 30 s, 3.3 GB), and B can plant as many as it likes. The owner (and link
// count, and type) can be judged from the descriptor before a byte is read;
// another uid's file is kept whatever its bytes. Here the planted file (256 MiB, to keep the test short) is
// another uid's; the assertion is the bytes this process read during one
// Lock+Unlock, from /proc/self/io. Proposed fix (statelock residue.go):
// judge foreignFile and nlink on an fstat before the capture, and skip the
// capture for a file that will be kept.
func TestAdversaryPlantedHugeResidueNotRead(t *testing.T) {
	testfs.RequireRoot(t)
	e := newEnv(t)
	if err := syscall.Chmod(e.dir, 0o1777); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(e.dir, ".state.json.00000001-0000-4000-8000-000000000000.replacement")
	f, err := os.Create(planted)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(256 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chown(planted, 4341, 4341); err != nil {
		t.Fatal(err)
	}
	before := rchar(t)
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	read := rchar(t) - before
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(planted); err != nil {
		t.Fatalf("the planted file is gone: %v", err)
	}
	if read > 32<<20 {
		t.Errorf("one acquisition read %d MB: the sweep read another uid's planted residue", read>>20)
	}
}

// TestOversizedOwnResidueKeptUnread: a staging file of F that is our own
// but larger than anything a writer of F leaves (residueBound: four times
// F, at least 64 MiB) is kept and reported, not read under the lock. On
// the old code the sweep captured it whole (and removed it).
func TestOversizedOwnResidueKeptUnread(t *testing.T) {
	e := newEnv(t)
	if err := os.WriteFile(e.state, []byte("small"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(e.dir, ".state.json.00000002-0000-4000-8000-000000000000.replacement")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(residueFloor + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	before := rchar(t)
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	read := rchar(t) - before
	res := h.Residue()
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(big); err != nil {
		t.Fatalf("the oversized residue is gone: %v", err)
	}
	if read > 32<<20 {
		t.Errorf("one acquisition read %d MB of an oversized residue", read>>20)
	}
	found := false
	for _, r := range res {
		if filepath.Base(big) == r.Name && !r.Removed && strings.Contains(r.Note, "larger than anything a writer") {
			found = true
		}
	}
	if !found {
		t.Errorf("the oversized residue is not reported as kept for its size: %+v", res)
	}
}

// A residue file within the bound when the sweep looks (its lstat) but
// grown far past it before the capture reads it (by a writer that still
// has it open, or another uid's process) is read at most up to the bound
// and kept: the capture is capped at residueBound too. On the old code
// the sweep's capture (AnySize, no cap) read the whole grown file.
func TestResidueGrownAfterLookReadOnlyToBound(t *testing.T) {
	e := newEnv(t)
	if err := os.WriteFile(e.state, []byte("small"), 0o600); err != nil {
		t.Fatal(err)
	}
	name := ".state.json.00000003-0000-4000-8000-000000000000.replacement"
	big := filepath.Join(e.dir, name)
	if err := os.WriteFile(big, bytes.Repeat([]byte("x"), 1024), 0o600); err != nil {
		t.Fatal(err)
	}
	const grown = 8 * residueFloor
	var once sync.Once
	t.Cleanup(hook.Set(hook.CaptureRead, func(p string) {
		if filepath.Base(p) == name {
			once.Do(func() {
				if err := os.Truncate(big, grown); err != nil {
					t.Error(err)
				}
			})
		}
	}))
	before := rchar(t)
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	read := rchar(t) - before
	res := h.Residue()
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(big); err != nil {
		t.Fatalf("the grown residue is gone: %v", err)
	}
	if read > 2*residueFloor {
		t.Errorf("one acquisition read %d MB of a residue grown to %d MB after the look; want at most the bound (%d MB)",
			read>>20, grown>>20, residueFloor>>20)
	}
	for _, r := range res {
		if r.Name == name && !r.Removed {
			return
		}
	}
	t.Errorf("the grown residue is not reported as kept: %+v", res)
}
