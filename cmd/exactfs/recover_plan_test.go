//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runEnv is runIn with extra environment variables.
func runEnv(t testing.TB, dir string, env []string, args ...string) result {
	t.Helper()
	return runWith(t, dir, quick, "", env, args...)
}

// killedHolder takes the lock of stateFile in dir with extra flags, then
// SIGKILLs exactfs while it holds it, leaving its record behind.
func killedHolder(t *testing.T, dir, stateFile string, flags ...string) {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "ready")
	args := append(append([]string{"lock"}, flags...), stateFile, "--", "sh", "-c", "touch "+ready+"; exec sleep 60")
	cmd := exec.Command(exactfsBin, args...)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the holder did not take the lock within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
}

func planOf(t *testing.T, r result) []string {
	t.Helper()
	var st statusJSON
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r)
	}
	var out []string
	for _, a := range st.Recover {
		out = append(out, a.Kind+" "+a.Path)
	}
	sort.Strings(out)
	return out
}

// dryRunPlan reads the "would KIND PATH" lines of recover --dry-run.
func dryRunPlan(r result) []string {
	var out []string
	for _, l := range strings.Split(r.stdout, "\n") {
		if rest, ok := strings.CutPrefix(l, "would "); ok {
			i := strings.LastIndex(rest, " ")
			out = append(out, strings.ReplaceAll(rest[:i], " ", "-")+" "+rest[i+1:])
		}
	}
	sort.Strings(out)
	return out
}

// TestHolderUnderAnotherConfigRoot: a holder killed while it used another
// config root (here GJC_CONFIG_ROOT, as a TypeScript peer or a sudo run
// would) is named, judged with that root's id, and reclaimed by recover.
// A Go holder's record with a kernel slot of this boot is judged by the
// slot whatever its host id (statelock judge.go), so it is stale under
// this root at once; the rest runs on the same record without its
// ofd_slot (as a holder on a kernel without pidfs writes it), which only
// the host id can judge.
func TestHolderUnderAnotherConfigRoot(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(t.TempDir(), "gjc")
	if err := os.Mkdir(other, 0o700); err != nil { // a missing --config-root is refused
		t.Fatal(err)
	}
	killedHolder(t, dir, "s", "--config-root", other)
	lock := filepath.Join(dir, "s.lock")
	b, err := os.ReadFile(lock)
	if err != nil {
		t.Fatal(err)
	}
	slot := regexp.MustCompile(`,"ofd_slot":[0-9]+`)
	if slot.Match(b) {
		if st := statusOf(t, dir, "s"); st.Lock != "stale" {
			t.Fatalf("a killed holder's slot record of this boot under another config root: %+v, want stale", st)
		}
		if err := os.WriteFile(lock, slot.ReplaceAll(b, nil), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	// Without a hint at the other root: another host, respected.
	st := statusOf(t, dir, "s")
	if st.Lock != "held" || st.Holder == nil || st.Holder.ThisHost || st.Holder.OtherConfigRoot != nil {
		t.Fatalf("status under this root: %+v", st)
	}
	r := runIn(t, dir, quick, "", "lock", "--try", "s", "--", "true")
	expectCode(t, r, exitBusy, "lock --try under this root")
	if !strings.Contains(r.stderr, "another config root") {
		t.Errorf("the busy lock of another host gives no way forward:\n%s", r.stderr)
	}

	env := []string{"GJC_CONFIG_ROOT=" + other}
	r = runEnv(t, dir, env, "status", "s")
	expectCode(t, r, 0, "status")
	if !strings.Contains(r.stdout, "under another config root: "+other) || !strings.Contains(r.stdout, "holder is dead") {
		t.Fatalf("status does not explain the other config root:\n%s", r.stdout)
	}
	r = runEnv(t, dir, env, "status", "--json", "s")
	var js statusJSON
	json.Unmarshal([]byte(r.stdout), &js)
	if o := js.Holder.OtherConfigRoot; o == nil || o.Path != other || o.Verdict != "dead" {
		t.Fatalf("status --json other_config_root: %+v\n%s", o, r.stdout)
	}
	plan := planOf(t, r)
	dry := runEnv(t, dir, env, "recover", "--dry-run", "s")
	expectCode(t, dry, 0, "recover --dry-run")
	if fmt.Sprint(dryRunPlan(dry)) != fmt.Sprint(plan) || len(plan) != 1 || !strings.HasPrefix(plan[0], stepReclaim) {
		t.Fatalf("status plan %v, dry run %v:\n%s", plan, dryRunPlan(dry), dry.stdout)
	}
	r = runEnv(t, dir, env, "recover", "s")
	expectCode(t, r, 0, "recover")
	if !strings.Contains(r.stdout, "done: the lock was taken and released") || strings.Contains(r.stdout, "leave s.lock") {
		t.Fatalf("recover did not reclaim, or says it left the lock:\n%s", r.stdout)
	}
	expectCode(t, runIn(t, dir, quick, "", "lock", "--try", "s", "--", "true"), 0, "lock --try under this root after recover")
}

// TestHolderOfAnotherMachine: a record with a host id no config root here
// gives is explained, and the exact removal it prints frees the lock.
func TestHolderOfAnotherMachine(t *testing.T) {
	dir := t.TempDir()
	rec := `{"pid":4242,"start_time":"123","start_time_format":"linux-proc-v1","token":"t-1","owner_host_id":"` + strings.Repeat("ab", 32) + `"}`
	if err := os.WriteFile(filepath.Join(dir, "s.lock"), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runIn(t, dir, quick, "", "recover", "s")
	expectCode(t, r, 0, "recover")
	i := strings.Index(r.stdout, "exactfs rm --expect ")
	if !strings.Contains(r.stdout, "another host wrote it") || i < 0 {
		t.Fatalf("recover does not explain a record of another machine:\n%s", r.stdout)
	}
	if mustRead(t, filepath.Join(dir, "s.lock")) != rec {
		t.Fatal("recover touched another machine's record")
	}
	args := strings.Fields(strings.SplitN(r.stdout[i:], "\n", 2)[0])[1:5]
	expectCode(t, runIn(t, dir, quick, "", args...), 0, strings.Join(args, " "))
	expectCode(t, runIn(t, dir, quick, "", "lock", "--try", "s", "--", "true"), 0, "lock after the removal")
}

const testUUID = "0b7e3c9a-1f2d-4c5e-8a9b-0c1d2e3f4a5b"

// TestStatusPlanIsRecoverPlan: status --json lists what recover --dry-run
// lists (a dead holder, and the staging file its killed write left, which
// no process has open: the lock's residue sweep removes it, whatever its
// age), and the real run does exactly that; a staging file planted later
// is planned and swept the same way by a recover that reclaims nothing.
// Where the kernel cannot prove the staging file unopened (no lease probe:
// macOS, the BSDs, the portable build) neither plans the sweep, and the
// file stays, listed as residue with why it is kept.
func TestStatusPlanIsRecoverPlan(t *testing.T) {
	_, sweeps := kernelTells(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	killedHolder(t, dir, "s")
	name := ".s." + testUUID + ".replacement"
	os.WriteFile(filepath.Join(dir, name), []byte("half"), 0o600)
	kept := func(st statusJSON) bool {
		return len(st.Residue) == 1 && st.Residue[0].Name == name && strings.Contains(st.Residue[0].Note, "kept: ")
	}

	r := runIn(t, dir, quick, "", "status", "--json", "s")
	expectCode(t, r, 0, "status --json")
	plan := planOf(t, r)
	want := []string{stepReclaim + " s.lock"}
	if sweeps {
		want = append(want, stepSweep+" "+name)
	}
	if fmt.Sprint(plan) != fmt.Sprint(want) {
		t.Fatalf("status plan %v, want %v\n%s", plan, want, r.stdout)
	}
	dry := runIn(t, dir, quick, "", "recover", "--dry-run", "s")
	expectCode(t, dry, 0, "recover --dry-run")
	if got := dryRunPlan(dry); fmt.Sprint(got) != fmt.Sprint(plan) {
		t.Fatalf("recover --dry-run plans %v, status %v:\n%s", got, plan, dry.stdout)
	}
	r = runIn(t, dir, quick, "", "recover", "s")
	expectCode(t, r, 0, "recover")
	if st := statusOf(t, dir, "s"); len(st.Recover) != 0 || st.Lock != "released" || (sweeps && len(st.Residue) != 0) || (!sweeps && !kept(st)) {
		t.Fatalf("after recover: %+v\n%s", st, r.stdout)
	}
	if !sweeps {
		dry = runIn(t, dir, quick, "", "recover", "--dry-run", "s")
		if got := dryRunPlan(dry); len(got) != 0 {
			t.Fatalf("recover --dry-run plans %v for a staging file nothing proves unopened:\n%s", got, dry.stdout)
		}
		if _, err := os.Lstat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("the staging file nothing proves unopened was removed: %v", err)
		}
		return
	}

	os.WriteFile(filepath.Join(dir, name), []byte("half"), 0o600)
	dry = runIn(t, dir, quick, "", "recover", "--dry-run", "s")
	if got := dryRunPlan(dry); fmt.Sprint(got) != fmt.Sprint([]string{stepSweep + " " + name}) {
		t.Fatalf("recover --dry-run plans %v:\n%s", got, dry.stdout)
	}
	r = runIn(t, dir, quick, "", "recover", "s")
	expectCode(t, r, 0, "recover of a free lock with residue")
	if _, err := os.Lstat(filepath.Join(dir, name)); !os.IsNotExist(err) {
		t.Fatalf("recover left the planned staging file:\n%s", r.stdout)
	}
}

// TestRecoverPromisesOnlyWhatItDoes: where the reaper does not run (a
// directory others may read) it is promised nothing, and the lock's sweep
// is promised what it then removes; a staging file a process has open is
// kept by the sweep, promised to the reaper conditionally, and the real run
// that keeps it exits 75.
//
// Where the kernel cannot prove a staging file unopened (no lease probe:
// macOS, the BSDs, the portable build) nothing is promised for it and
// nothing removes it.
func TestRecoverPromisesOnlyWhatItDoes(t *testing.T) {
	_, sweeps := kernelTells(t)
	open := t.TempDir()
	os.Chmod(open, 0o755)
	staging := filepath.Join(open, ".s."+testUUID+".replacement")
	os.WriteFile(staging, []byte("half"), 0o600)
	dry := runIn(t, open, quick, "", "recover", "--dry-run", "--min-age", "0", "s")
	expectCode(t, dry, 0, "recover --dry-run in a 0755 directory")
	if !sweeps {
		if strings.Contains(dry.stdout, "would ") {
			t.Fatalf("dry run promises what nothing can prove here:\n%s", dry.stdout)
		}
		r := runIn(t, open, quick, "", "recover", "--min-age", "0", "s")
		expectCode(t, r, 0, "recover in a 0755 directory (nothing planned)")
		if _, err := os.Lstat(staging); err != nil {
			t.Fatalf("a staging file nothing proves unopened was removed:\n%s", r.stdout)
		}
		return
	}
	// The store reaper runs only in an owner-only directory, so nothing is
	// promised for it here; the lock's own residue sweep runs wherever the
	// lock does, and what it will remove is promised, then done.
	if strings.Contains(dry.stdout, "would reap") || !strings.Contains(dry.stdout, "would sweep residue "+filepath.Base(staging)) {
		t.Fatalf("dry run in a 0755 directory:\n%s", dry.stdout)
	}
	r := runIn(t, open, quick, "", "recover", "--min-age", "0", "s")
	expectCode(t, r, 0, "recover in a 0755 directory (the sweep planned)")
	if _, err := os.Lstat(staging); !os.IsNotExist(err) {
		t.Fatalf("the sweep promised by the dry run was not done:\n%s", r.stdout)
	}
	if st := statusOf(t, open, "s"); len(st.Recover) != 0 {
		t.Fatalf("status plans %v in a 0755 directory", st.Recover)
	}

	if !leaseProofAvailable(t) {
		t.Skip("no write-lease proof on this filesystem: an open staging file is kept by every run")
	}
	private := t.TempDir()
	os.Chmod(private, 0o700)
	staging = filepath.Join(private, ".s."+testUUID+".replacement")
	os.WriteFile(staging, []byte("half"), 0o600)
	f, err := os.Open(staging) // a writer that is still alive
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	time.Sleep(10 * time.Millisecond) // the reaper wants its last change in the past
	dry = runIn(t, private, quick, "", "recover", "--dry-run", "--min-age", "0", "s")
	if !strings.Contains(dry.stdout, "would reap staging") || !strings.Contains(dry.stdout, "only if no process has it open") {
		t.Fatalf("dry run:\n%s", dry.stdout)
	}
	r = runIn(t, private, quick, "", "recover", "--min-age", "0", "s")
	expectCode(t, r, exitBusy, "recover of a staging file a process has open")
	if _, err := os.Lstat(staging); err != nil {
		t.Fatal("an open staging file was reaped")
	}
	f.Close()
	r = runIn(t, private, quick, "", "recover", "--min-age", "0", "s")
	expectCode(t, r, 0, "recover once the file is closed")
	if _, err := os.Lstat(staging); !os.IsNotExist(err) {
		t.Fatalf("the closed staging file was kept:\n%s", r.stdout)
	}
}

// leaseProofAvailable says whether the reaper can prove a staging file
// unopened here (F_SETLEASE on the test's temporary filesystem).
func leaseProofAvailable(t *testing.T) bool {
	p := filepath.Join(t.TempDir(), "probe")
	os.WriteFile(p, nil, 0o600)
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	return setLease(f) == nil
}

// TestRecoverPlansNoReapItCannotDo: a staging file past --min-age is
// planned for the reaper only where the kernel can say whether a process
// has it open. Where it cannot (no lease probe: macOS, the BSDs, the
// portable build) the reaper keeps it at every run, so planning it made
// recover exit 75 with "retry", advice no retry can satisfy: it is left
// for a person, with the exact removal to run if its writer is known gone,
// and recover exits 0. Where the kernel can tell, the lock's sweep removes
// it (it is the state file's own residue).
func TestRecoverPlansNoReapItCannotDo(t *testing.T) {
	_, tells := kernelTells(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	name := ".s." + testUUID + ".replacement"
	p := filepath.Join(dir, name)
	os.WriteFile(p, []byte("half"), 0o600)
	dry := runIn(t, dir, quick, "", "recover", "--dry-run", "--min-age", "1ns", "s")
	expectCode(t, dry, 0, "recover --dry-run")
	r := runIn(t, dir, quick, "", "recover", "--min-age", "1ns", "s")
	expectCode(t, r, 0, "recover")
	_, err := os.Lstat(p)
	if tells {
		if err == nil {
			t.Fatalf("the staging file the kernel proves unopened was left:\n%s", r.stdout)
		}
		return
	}
	if err != nil || strings.Contains(dry.stdout, "would reap") || !strings.Contains(r.stdout, "exactfs rm --expect ") {
		t.Fatalf("kernel cannot tell: present %v (want kept), dry run:\n%s\nrun:\n%s", err == nil, dry.stdout, r.stdout)
	}
}
