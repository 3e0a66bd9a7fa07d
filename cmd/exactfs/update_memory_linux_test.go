//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// update holds a big state's bytes a bounded number of times: CMD's output
// is read into a buffer sized for a result as large as the state, not one
// grown by doubling (which held up to three copies at its peak: a 256 MiB
// state cost 1.6 GB). A memory bound, from the kernel's count of the
// process's peak resident set (ru_maxrss), not a timing.
func TestUpdateBigStateMemoryBounded(t *testing.T) {
	const size = 64 << 20
	dir := t.TempDir()
	state := filepath.Join(dir, "s")
	f, err := os.Create(state)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte('a' + i%26)
	}
	for i := 0; i < size/len(chunk); i++ {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	cmd := exec.Command(exactfsBin, "update", state, "--", "cat")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("update of a %d MiB state through cat: %v\n%s", size>>20, err, out)
	}
	peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB
	if fi, err := os.Stat(state); err != nil || fi.Size() != size {
		t.Fatalf("state after update: %v, %v", fi, err)
	}
	// The old bytes, CMD's output, and what the write and its proof
	// need: about three times the state, plus the runtime.
	if limit := int64(4*size + 64<<20); peak > limit {
		t.Errorf("update of a %d MiB state peaked at %d MiB resident; want at most %d MiB", size>>20, peak>>20, limit>>20)
	}
	t.Logf("peak resident %d MiB for a %d MiB state", peak>>20, size>>20)
}
