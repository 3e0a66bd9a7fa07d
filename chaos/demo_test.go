package chaos

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
// Where no kernel tells that a staging file's writer is gone (macOS, the
// portable build: sweepsResidue), the residue is kept instead: at most one
// file per killed worker, each listed by exactfs status as kept.
//
// EXACTFS_CHAOS_SCALE=N (see mixed_test.go) multiplies the workers by N and
// divides the updates between kills by N (at least 2); EXACTFS_CHAOS_RUNS
// sets the number of runs (default 3); EXACTFS_CHAOS_SEED the demo's seed.
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
	runs := envRuns()
	workers, killEvery := 16*chaosScale, max(8/chaosScale, 2)
	for i := range runs {
		dir := t.TempDir()
		seed := chaosSeed(t) + uint64(i)
		if seed == 0 {
			seed = 1 // 0 is the demo's "random"
		}
		cmd := exec.Command(bin, "demo", "--kill-anywhere", "--workers", strconv.Itoa(workers), "--updates", "50",
			"--kill-every", strconv.Itoa(killEvery), "--dir", dir, "--keep", "--seed", strconv.FormatUint(seed, 10))
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
		if sweepsResidue && len(residue) != 0 {
			t.Fatalf("run %d (demo seed %d) left staging files of killed writers: %v\n%s", i+1, seed, residue, out)
		}
		if !sweepsResidue && len(residue) != 0 {
			keptResidue(t, bin, dir, residue, string(out))
		}
		t.Logf("run %d (%d workers, a kill every %d updates, demo seed %d, %d staging files kept):\n%s",
			i+1, workers, killEvery, seed, len(residue), summary(string(out)))
	}
}

// keptResidue checks the staging files a run left where the kernel cannot
// tell that their writers are gone: no more than the workers killed, and
// each one reported by exactfs status as kept, so that a person sees it.
func keptResidue(t *testing.T, bin, dir string, residue []string, out string) {
	t.Helper()
	m := regexp.MustCompile(`workers killed with SIGKILL\s+(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the demo's report has no count of killed workers:\n%s", out)
	}
	killed, _ := strconv.Atoi(m[1])
	if len(residue) > killed {
		t.Fatalf("%d staging files left, more than the %d workers killed: %v\n%s", len(residue), killed, residue, out)
	}
	state := filepath.Join(filepath.Dir(residue[0]), "state.json")
	st, err := exec.Command(bin, "status", state).CombinedOutput()
	if err != nil {
		t.Fatalf("exactfs status %s: %v\n%s", state, err, st)
	}
	for _, p := range residue {
		if !strings.Contains(string(st), filepath.Base(p)) {
			t.Errorf("exactfs status does not report the kept staging file %s:\n%s", filepath.Base(p), st)
		}
	}
	if !strings.Contains(string(st), "kept: the kernel cannot tell") {
		t.Errorf("exactfs status does not say why the staging files are kept:\n%s", st)
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
