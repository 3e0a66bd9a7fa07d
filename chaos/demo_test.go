package chaos

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The demo's chaos with kills at any instant (the transform, the durable
// write, the release), at 16 workers and kills more often than the default
// (every 8 acknowledged updates instead of 25), several runs. Each run must
// pass the demo's own checks (no lost or duplicated update, no overlapping
// holds, every killed holder's lock reclaimed at once, no worker failing),
// and leave no staging file of the state file behind: the residue of
// writers killed during the durable write is swept by the next holder.
//
// EXACTFS_CHAOS_SCALE=N (see mixed_test.go) multiplies the workers by N and
// divides the updates between kills by N (at least 2).
//
// About 20 s a run on 2 busy cores (50 s at scale 2).
func TestDemoKillAnywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("soak test skipped in -short mode")
	}
	bin := filepath.Join(t.TempDir(), "exactfs")
	build := exec.Command("go", "build", "-o", bin, "github.com/exactfs/exactfs/cmd/exactfs")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	const runs = 3
	workers, killEvery := 16*chaosScale, max(8/chaosScale, 2)
	for i := range runs {
		dir := t.TempDir()
		cmd := exec.Command(bin, "demo", "--kill-anywhere", "--workers", strconv.Itoa(workers), "--updates", "50",
			"--kill-every", strconv.Itoa(killEvery), "--dir", dir, "--keep")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("run %d: %v\n%s", i+1, err, out)
		}
		var residue []string
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && strings.HasSuffix(p, ".replacement") {
				residue = append(residue, p)
			}
			return nil
		})
		if len(residue) != 0 {
			t.Fatalf("run %d left staging files of killed writers: %v\n%s", i+1, residue, out)
		}
		t.Logf("run %d (%d workers, a kill every %d updates):\n%s", i+1, workers, killEvery, summary(string(out)))
	}
}

// summary keeps the demo's table lines.
func summary(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "  ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
