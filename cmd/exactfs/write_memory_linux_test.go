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
	// A child's ru_maxrss starts at the test process's own resident size
	// (Go starts it with CLONE_VM, and exec records the shared memory's
	// high-water mark): under -race that alone was 93 MiB. So the bound is
	// on the excess over a command that reads nothing, started the same
	// way right after (that high-water mark only grows, so this floor is
	// never below the one the write started with).
	base := exec.Command(exactfsBin, "version")
	if out, err := base.CombinedOutput(); err != nil {
		t.Fatalf("exactfs version: %v\n%s", err, out)
	}
	floor := base.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	if limit := int64(32 << 20); peak-floor > limit {
		t.Errorf("write of %d MiB from stdin peaked at %d MiB resident, %d MiB over a command that reads nothing; want at most %d MiB over",
			size>>20, peak>>20, (peak-floor)>>20, limit>>20)
	}
	t.Logf("peak resident %d MiB for %d MiB of stdin (%d MiB for exactfs version)", peak>>20, size>>20, floor>>20)
}
