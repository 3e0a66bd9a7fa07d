package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/exactfs/exactfs/internal/testfs"
)

// uidWorld is a directory tree other uids can reach, with a copy of the
// binary they can run (the test binary's own temp directories are 0700).
type uidWorld struct{ top, exe string }

func newUIDWorld(t *testing.T) *uidWorld {
	t.Helper()
	testfs.RequireRoot(t)
	top, err := os.MkdirTemp("", "exactfs-cli-uids-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	if err := os.Chmod(top, 0o755); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(exactfsBin)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(top, "exactfs")
	if err := os.WriteFile(exe, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	return &uidWorld{top: top, exe: exe}
}

// home makes a home directory owned by uid.
func (w *uidWorld) home(t *testing.T, uid int) string {
	t.Helper()
	h := filepath.Join(w.top, "home-"+strconv.Itoa(uid))
	if err := os.Mkdir(h, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(h, uid, -1); err != nil {
		t.Fatal(err)
	}
	return h
}

// run runs the binary as uid:gid (no supplementary groups) with exactly
// env, in dir.
func (w *uidWorld) run(t *testing.T, uid, gid int, dir string, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), quick)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.exe, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("exactfs %q as uid %d: still running after %v", args, uid, quick)
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return r
}

// TestGroupSharedDirectoryTwoUIDs: two uids of one group share a setgid
// 2770 directory. The first one's update works; the second one's update
// and lock are refused and told why (the records are owner-only, so every
// process sharing a lock must be one user) and whose the records are;
// status says permission_denied with the record's owner (exit 74, --exit-
// status 3), not "unreadable ... recover removes it"; recover exits 74,
// not "nothing to recover" 0; stat on the other uid's 0600 file says
// "permission denied" once, with whose the file is. Fails on f315da3
// (no word of one uid; the recover hint; the triple message).
func TestGroupSharedDirectoryTwoUIDs(t *testing.T) {
	w := newUIDWorld(t)
	const a, b, gid = 4101, 4102, 4100
	dir := filepath.Join(w.top, "shared")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 0, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o2770); err != nil {
		t.Fatal(err)
	}
	envA := []string{"HOME=" + w.home(t, a)}
	envB := []string{"HOME=" + w.home(t, b)}
	expectCode(t, w.run(t, a, gid, dir, envA, "{\"n\":0}\n", "write", "--mode", "0660", "s.json"), 0, "uid A: write")
	expectCode(t, w.run(t, a, gid, dir, envA, "", "update", "s.json", "--", "sh", "-c", "cat; echo"), 0, "uid A: update")

	for _, args := range [][]string{{"update", "s.json", "--", "sh", "-c", "cat; echo"}, {"lock", "s.json", "--", "true"}} {
		r := w.run(t, b, gid, dir, envB, "", args...)
		what := "uid B: " + strings.Join(args, " ")
		if r.code != exitUnsafe && r.code != exitIO {
			t.Fatalf("%s: want 77 or 74, got %s", what, r)
		}
		for _, want := range []string{"belongs to uid 4101", "this process runs as uid 4102", "every process sharing a lock must run as the same user"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%s lacks %q: %s", what, want, r.stderr)
			}
		}
	}
	r := w.run(t, b, gid, dir, envB, "", "status", "s.json")
	expectCode(t, r, exitIO, "uid B: status")
	if !strings.Contains(r.stdout, "may not open") || !strings.Contains(r.stderr, "must run as the same user") || strings.Contains(r.stderr, "30s old") {
		t.Errorf("uid B: status: %s", r)
	}
	r = w.run(t, b, gid, dir, envB, "", "status", "--json", "s.json")
	var st statusJSON
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r)
	}
	if st.Lock != "permission_denied" || st.RecordOwner == nil || st.RecordOwner.Uid != a || st.RecordOwner.Mode != "0600" {
		t.Errorf("uid B: status --json: lock %q, record_owner %+v", st.Lock, st.RecordOwner)
	}
	expectCode(t, w.run(t, b, gid, dir, envB, "", "status", "--exit-status", "s.json"), statusBlocked, "uid B: status --exit-status")
	r = w.run(t, b, gid, dir, envB, "", "recover", "s.json")
	expectCode(t, r, exitIO, "uid B: recover")
	// In words, not the state's name ("s.json.lock is permission_denied").
	if !strings.Contains(r.stdout, "a record this user may not open") || strings.Contains(r.stdout, "permission_denied") {
		t.Errorf("uid B: recover: %s", r)
	}

	if err := os.WriteFile(filepath.Join(dir, "private"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chown(filepath.Join(dir, "private"), a, gid)
	r = w.run(t, b, gid, dir, envB, "", "stat", "private")
	expectCode(t, r, exitIO, "uid B: stat of uid A's 0600 file")
	first := strings.SplitN(r.stderr, "\n", 2)[0]
	if strings.Count(first, "permission denied") != 1 || !strings.Contains(r.stderr, "belongs to uid 4101") {
		t.Errorf("uid B: stat: %s", r.stderr)
	}
}

// TestUnwritableHomeHint: a service user whose HOME cannot be written
// (uid 65534, HOME=/nonexistent) is told about --config-root, and status
// does not say it takes the lock. Fails on f315da3 ("cannot take ...
// creating config root", no hint).
func TestUnwritableHomeHint(t *testing.T) {
	w := newUIDWorld(t)
	dir := filepath.Join(w.top, "d")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777)
	for _, args := range [][]string{{"status", "s"}, {"lock", "s", "--", "true"}} {
		r := w.run(t, 65534, 65534, dir, []string{"HOME=/nonexistent"}, "", args...)
		what := "uid 65534, HOME=/nonexistent: " + strings.Join(args, " ")
		expectCode(t, r, exitIO, what)
		if !strings.Contains(r.stderr, "pass --config-root DIR") {
			t.Errorf("%s: %s", what, r.stderr)
		}
		if args[0] == "status" && strings.Contains(r.stderr, "cannot take") {
			t.Errorf("%s: %s", what, r.stderr)
		}
	}
}

// TestHolderInAnotherPidNamespace: a holder started under unshare --pid is
// named "pid 1 in another pid namespace (ns N)" by status, text and JSON,
// and the busy hint says its pid is not one ps shows here. Fails on
// f315da3 ("pid 1 on this host").
func TestHolderInAnotherPidNamespace(t *testing.T) {
	testfs.RequireUnshare(t)
	dir := t.TempDir()
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := exec.Command("unshare", "--pid", "--fork", "--mount-proc", exactfsBin, "lock", "s", "--", "sh", "-c", "touch "+ready+"; exec sleep 30")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	waitFile(t, ready, cmd)
	r := runIn(t, dir, quick, "", "status", "s")
	expectCode(t, r, 0, "status")
	if !strings.Contains(r.stdout, "held by pid 1 in another pid namespace (ns ") {
		t.Errorf("status of a holder in another pid namespace:\n%s", r.stdout)
	}
	st := statusOf(t, dir, "s")
	if st.Holder == nil || !st.Holder.OtherPidNS || st.Holder.PidNS == 0 || st.Holder.Command != "" {
		t.Errorf("status --json: %+v", st.Holder)
	}
	r = runIn(t, dir, quick, "", "lock", "--try", "s", "--", "true")
	expectCode(t, r, exitBusy, "lock --try")
	if !strings.Contains(r.stderr, "in another pid namespace") {
		t.Errorf("lock --try: %s", r.stderr)
	}
}
