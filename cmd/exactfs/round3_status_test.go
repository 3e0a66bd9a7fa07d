//go:build unix

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// crashedClaim leaves the transition claim of stateFile in dir as a crash
// leaves it: an empty directory with no sidecar, two minutes old.
func crashedClaim(t *testing.T, dir, stateFile string) {
	t.Helper()
	claim := filepath.Join(dir, stateFile+".lock.transition")
	if err := os.Mkdir(claim, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Minute)
	if err := os.Chtimes(claim, old, old); err != nil {
		t.Fatal(err)
	}
}

// TestStatusExitStatus: --exit-status gives 0 free, 1 held, 2 stale, 3
// blocked (a crashed claim, something unsafe at the lock path), while
// plain status keeps its 0/77. Fails on f315da3 (no --exit-status; 0 for
// all four).
func TestStatusExitStatus(t *testing.T) {
	dir := t.TempDir()
	startHolder(t, dir, "held", 30)
	killedHolder(t, dir, "stale")
	crashedClaim(t, dir, "crashed")
	if err := os.Symlink("elsewhere", filepath.Join(dir, "unsafe.lock")); err != nil {
		t.Fatal(err)
	}
	for state, want := range map[string][2]int{
		"free": {0, statusFree}, "held": {0, statusHeld}, "stale": {0, statusStale},
		"crashed": {0, statusBlocked}, "unsafe": {exitUnsafe, statusBlocked},
	} {
		expectCode(t, runIn(t, dir, quick, "", "status", state), want[0], "status "+state)
		expectCode(t, runIn(t, dir, quick, "", "status", "--exit-status", state), want[1], "status --exit-status "+state)
	}
	// Errors that leave nothing described keep their codes.
	expectCode(t, runIn(t, dir, quick, "", "status", "--exit-status", "nodir/s"), exitIO, "status --exit-status nodir/s")
}

// TestStatusDirListsEveryLock: status DIR (., dir/, dir) lists each lock in
// it, a crashed claim without a record included, --json an array of them,
// --exit-status the worst; a directory used as a STATEFILE has its own
// lock listed last. Fails on f315da3 ("names a directory", exit 64).
func TestStatusDirListsEveryLock(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	startHolder(t, sub, "a.json", 30)
	expectCode(t, runIn(t, sub, quick, "", "lock", "b.json", "--", "true"), 0, "lock b.json")
	crashedClaim(t, sub, "c.json")
	expectCode(t, runIn(t, dir, quick, "", "lock", "sub", "--", "true"), 0, "lock sub (the directory by its name)")

	for _, tc := range []struct{ cwd, arg string }{{sub, "."}, {dir, "sub/"}, {dir, "sub"}} {
		r := runIn(t, tc.cwd, quick, "", "status", tc.arg)
		expectCode(t, r, 0, "status "+tc.arg)
		for _, want := range []string{"a.json.lock: held by pid", "b.json.lock: free (released)", "c.json.lock: free", "transition claim: crashed"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("status %s lacks %q:\n%s", tc.arg, want, r.stdout)
			}
		}
		if got := strings.Contains(r.stdout, "sub.lock: "); got != (tc.arg != ".") {
			t.Errorf("status %s: the lock of the directory itself listed: %v\n%s", tc.arg, got, r.stdout)
		}
		expectCode(t, runIn(t, tc.cwd, quick, "", "status", "--exit-status", tc.arg), statusBlocked, "status --exit-status "+tc.arg)
	}
	r := runIn(t, sub, quick, "", "status", "--json", ".")
	expectCode(t, r, 0, "status --json .")
	var all []statusJSON
	if err := json.Unmarshal([]byte(r.stdout), &all); err != nil || len(all) != 3 {
		t.Fatalf("status --json .: %v, %d objects\n%s", err, len(all), r.stdout)
	}
	if all[0].Lock != "held" || all[1].Lock != "released" || all[2].Claim.State != "crashed" {
		t.Errorf("status --json .: %+v", all)
	}
	empty := t.TempDir()
	if r := runIn(t, empty, quick, "", "status", "."); r.code != 0 || !strings.Contains(r.stdout, "no locks") {
		t.Errorf("status of a directory without locks: %s", r)
	}
}

// TestStatusShowsHolderCommand: the live holder's command line is in the
// text and the JSON. Fails on f315da3 (no command).
func TestStatusShowsHolderCommand(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("no /proc: the command line of a holder cannot be read here")
	}
	dir := t.TempDir()
	startHolder(t, dir, "s", 30)
	r := runIn(t, dir, quick, "", "status", "s")
	expectCode(t, r, 0, "status s")
	if !strings.Contains(r.stdout, "command: "+exactfsBin+" lock s -- sh -c") {
		t.Errorf("status does not show the holder's command:\n%s", r.stdout)
	}
	st := statusOf(t, dir, "s")
	if st.Holder == nil || !strings.Contains(st.Holder.Command, " lock s -- sh -c ") {
		t.Errorf("status --json holder: %+v", st.Holder)
	}
}

// TestStatusOfALockRecord: naming the lock record instead of its state
// file is refused with the state file to give; a STATEFILE ending in .lock
// with nothing there gets a note. Fails on f315da3, which described
// x.lock.lock as free without a word.
func TestStatusOfALockRecord(t *testing.T) {
	dir := t.TempDir()
	expectCode(t, runIn(t, dir, quick, "", "lock", "x.json", "--", "true"), 0, "lock x.json")
	r := runIn(t, dir, quick, "", "status", "x.json.lock")
	expectCode(t, r, exitUsage, "status x.json.lock")
	if !strings.Contains(r.stderr, "is the lock of x.json") || !strings.Contains(r.stderr, "exactfs status x.json") {
		t.Errorf("status x.json.lock: %s", r.stderr)
	}
	crashedClaim(t, dir, "y.json")
	r = runIn(t, dir, quick, "", "status", "y.json.lock.transition")
	expectCode(t, r, exitUsage, "status y.json.lock.transition")
	if !strings.Contains(r.stderr, "exactfs status y.json") {
		t.Errorf("status y.json.lock.transition: %s", r.stderr)
	}
	r = runIn(t, dir, quick, "", "recover", "x.json.lock")
	expectCode(t, r, exitUsage, "recover x.json.lock")
	if !strings.Contains(r.stderr, "exactfs recover x.json") {
		t.Errorf("recover x.json.lock: %s", r.stderr)
	}
	r = runIn(t, dir, quick, "", "status", "job.lock")
	expectCode(t, r, 0, "status job.lock (nothing there)")
	if !strings.Contains(r.stderr, "the lock of STATEFILE job.lock is job.lock.lock") {
		t.Errorf("status job.lock: no note: %s", r.stderr)
	}
}

// TestPathRules: one rule for '..' in every command, relative or absolute
// (64, nothing touched, the path the kernel means offered, resolved
// through a symlink as the kernel would), and STATEFILE "." or "dir/" is
// refused by lock. Fails on f315da3, where write and stat accepted an
// absolute path with '..', lock refused it, and 'lock .' said "cannot take
// ..lock".
func TestPathRules(t *testing.T) {
	dir := t.TempDir()
	deep := filepath.Join(dir, "a", "b", "c")
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(deep, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	before := dirTree(t, dir)
	for _, p := range []string{"link/../s.json", dir + "/link/../s.json"} {
		for _, args := range [][]string{
			{"write", p}, {"stat", p}, {"rm", p}, {"status", p}, {"recover", p},
			{"lock", p, "--", "true"}, {"update", p, "--", "echo", "x"},
		} {
			r := runIn(t, dir, quick, "x\n", args...)
			what := strings.Join(args, " ")
			expectCode(t, r, exitUsage, what)
			// The kernel takes link/.. as the parent of link's target.
			if want := filepath.Join(dir, "a", "b", "s.json"); !strings.Contains(r.stderr, "this names "+want) {
				t.Errorf("%s does not offer %s: %s", what, want, r.stderr)
			}
		}
	}
	for _, p := range []string{".", "sub/", "./"} {
		r := runIn(t, dir, quick, "", "lock", p, "--", "true")
		expectCode(t, r, exitUsage, "lock "+p)
		if !strings.Contains(r.stderr, "names a directory, not a file") {
			t.Errorf("lock %s: %s", p, r.stderr)
		}
	}
	if after := dirTree(t, dir); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatalf("a refused path changed the tree:\n%v\n%v", before, after)
	}
}

func dirTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestBusyHintsPointTheRightWay: a crashed transition claim names 'exactfs
// recover STATEFILE' (waiting never helps), and an empty legacy directory
// says it has no owner and is taken over at 30 s. Fails on f315da3, where
// both said "held by a live (or unverifiable) owner; retry later, use
// --timeout to wait longer".
func TestBusyHintsPointTheRightWay(t *testing.T) {
	dir := t.TempDir()
	crashedClaim(t, dir, "s")
	r := runIn(t, dir, quick, "", "lock", "--timeout", "0.5", "s", "--", "true")
	expectCode(t, r, exitBusy, "lock behind a crashed claim")
	if !strings.Contains(r.stderr, "run 'exactfs recover s'") || strings.Contains(r.stderr, "--timeout to wait longer") {
		t.Errorf("crashed claim: %s", r.stderr)
	}
	if err := os.Mkdir(filepath.Join(dir, "t.lock"), 0o700); err != nil {
		t.Fatal(err)
	}
	r = runIn(t, dir, quick, "", "lock", "--timeout", "0.5", "t", "--", "true")
	expectCode(t, r, exitBusy, "lock behind an empty legacy directory")
	if !strings.Contains(r.stderr, "has no owner") || !strings.Contains(r.stderr, "rmdir t.lock") || strings.Contains(r.stderr, "live (or unverifiable)") {
		t.Errorf("empty legacy directory: %s", r.stderr)
	}
}

// TestThisBootUnderAnotherConfigRoot: a live holder that used a config
// root status cannot find (not a home directory's) is named as probably
// this host under another --config-root, because its record carries this
// boot's id; lock --try's hint says the same. Fails on f315da3 ("another
// host ... run recover on that host").
func TestThisBootUnderAnotherConfigRoot(t *testing.T) {
	if _, err := os.Stat("/proc/sys/kernel/random/boot_id"); err != nil {
		t.Skip("no boot id on this system")
	}
	dir := t.TempDir()
	other := filepath.Join(t.TempDir(), "demo-config")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(t.TempDir(), "ready")
	h := runBackground(t, dir, "lock", "--config-root", other, "s", "--", "sh", "-c", "touch "+ready+"; exec sleep 30")
	waitFile(t, ready, h)
	r := runIn(t, dir, quick, "", "status", "s")
	expectCode(t, r, 0, "status s")
	if !strings.Contains(r.stdout, "probably this host under another --config-root") || strings.Contains(r.stdout, "on that host") {
		t.Errorf("status of a record of this boot under another root:\n%s", r.stdout)
	}
	if st := statusOf(t, dir, "s"); st.Holder == nil || !st.Holder.ThisBoot {
		t.Errorf("status --json: this_boot not set: %+v", st.Holder)
	}
	r = runIn(t, dir, quick, "", "lock", "--try", "s", "--", "true")
	expectCode(t, r, exitBusy, "lock --try")
	if !strings.Contains(r.stderr, "this machine's current boot id") {
		t.Errorf("lock --try hint: %s", r.stderr)
	}
}

// runBackground starts the binary in dir and kills it when the test ends.
func runBackground(t *testing.T, dir string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(exactfsBin, args...)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

// waitFile waits up to 10 s for path to exist.
func waitFile(t *testing.T, path string, cmd *exec.Cmd) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v did not create %s within 10s", cmd.Args, path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
