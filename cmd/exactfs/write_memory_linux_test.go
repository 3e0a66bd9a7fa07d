package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// zeros is an endless reader of zero bytes.
type zeros struct{}

func (zeros) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

// TestWriteBigStdinMemoryBounded: write streams stdin into the staging
// file, so a big producer costs disk, not memory. Before, write read all
// of stdin first (128 MiB of stdin peaked above 128 MiB resident, and
// 'write s </dev/zero' grew until the machine ran out).
func TestWriteBigStdinMemoryBounded(t *testing.T) {
	const size = 128 << 20
	dir := t.TempDir()
	state := filepath.Join(dir, "s")
	cmd := exec.Command(exactfsBin, "write", state)
	cmd.Dir = dir
	cmd.Stdin = io.LimitReader(zeros{}, size)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("write of %d MiB from stdin: %v\n%s", size>>20, err, out)
	}
	peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB
	if fi, err := os.Stat(state); err != nil || fi.Size() != size {
		t.Fatalf("state after write: %v, %v", fi, err)
	}
	if limit := int64(48 << 20); peak > limit {
		t.Errorf("write of %d MiB from stdin peaked at %d MiB resident; want at most %d MiB", size>>20, peak>>20, limit>>20)
	}
	t.Logf("peak resident %d MiB for %d MiB of stdin", peak>>20, size>>20)
}
