//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
)

// TestMessagesShowPathAsGiven: a state file under a trusted system symlink
// (here Debian's /var/lock -> /run/lock, the shape of macOS's /var ->
// /private/var under which every TMPDIR lies) is opened through the
// link's target, and status, recover, doctor and the demo's banner show
// it as the user gave it. Before, each showed the target (on a Mac,
// /private/var/folders/… for a path given as /var/folders/…).
func TestMessagesShowPathAsGiven(t *testing.T) {
	fi, err := os.Lstat("/var/lock")
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Skip("/var/lock is not a symlink on this system")
	}
	target := exactfs.SystemPath("/var/lock")
	if target == "/var/lock" {
		t.Skip("/var/lock is not a symlink the library trusts on this system (not root's alone)")
	}
	name := "exactfs-test-" + filepath.Base(t.TempDir())
	given := "/var/lock/" + name
	t.Cleanup(func() {
		for _, n := range []string{name, name + ".lock", name + ".lock.transition.owner"} {
			os.Remove(filepath.Join(target, n))
		}
		os.Remove(filepath.Join(target, ".gjc-delete-state-lock-spare-"+name+".lock.transition"))
	})
	expectCode(t, runIn(t, t.TempDir(), quick, "", "update", given, "--", "echo", "1"), 0, "update")
	if _, err := os.Stat(filepath.Join(target, name)); err != nil {
		t.Fatalf("the state file is not under the link's target: %v", err)
	}
	for _, args := range [][]string{{"status", given}, {"recover", given}, {"doctor", "/var/lock"}} {
		r := runIn(t, t.TempDir(), quick, "", args...)
		expectCode(t, r, 0, strings.Join(args, " "))
		if !strings.Contains(r.stdout, "/var/lock") || strings.Contains(r.stdout, target) {
			t.Errorf("%s shows the target %s instead of the path given:\n%s", strings.Join(args, " "), target, r.stdout)
		}
	}
	r := runIn(t, t.TempDir(), time.Minute, "", "demo", "--dir", "/var/lock", "--workers", "2", "--updates", "3", "--chaos=false")
	demos, _ := filepath.Glob(filepath.Join(target, "exactfs-demo-*"))
	for _, d := range demos {
		t.Cleanup(func() { os.RemoveAll(d) })
	}
	expectCode(t, r, 0, "demo --dir /var/lock")
	if !strings.Contains(r.stdout, "on /var/lock/exactfs-demo-") || strings.Contains(r.stdout, target) {
		t.Errorf("the demo's banner shows the target %s instead of the path given:\n%s", target, r.stdout)
	}
}

// TestLockUpdateMessagesShowPathAsGiven: what lock and update print about a
// state file under a trusted system symlink names it as the user gave it
// (Debian's /var/lock -> /run/lock standing in for macOS's /var ->
// /private/var): a missing directory, an empty output of CMD, a
// hard-linked state file; a busy lock and a timed-out wait (which name the
// lock by its base name) never show the target. Before, lock and update
// resolved the path themselves and the first three named the target.
// EXACTFS_LOCK_PATH stays resolved (TestSystemSymlinkPrefix).
func TestLockUpdateMessagesShowPathAsGiven(t *testing.T) {
	fi, err := os.Lstat("/var/lock")
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Skip("/var/lock is not a symlink on this system")
	}
	target := exactfs.SystemPath("/var/lock")
	if target == "/var/lock" {
		t.Skip("/var/lock is not a symlink the library trusts on this system (not root's alone)")
	}
	name := "exactfs-test-" + filepath.Base(t.TempDir())
	given := "/var/lock/" + name
	t.Cleanup(func() {
		for _, n := range []string{name, name + ".other", name + ".lock", name + ".lock.transition.owner"} {
			os.Remove(filepath.Join(target, n))
		}
		os.Remove(filepath.Join(target, ".gjc-delete-state-lock-spare-"+name+".lock.transition"))
	})
	shows := func(what string, r result, want string) {
		t.Helper()
		if (want != "" && !strings.Contains(r.stderr, want)) || strings.Contains(r.stderr, target+"/") {
			t.Errorf("%s: the message does not name %s as given (the target is %s):\n%s", what, want, target, r.stderr)
		}
	}

	h := startHolder(t, t.TempDir(), given, 30)
	r := runIn(t, t.TempDir(), quick, "", "lock", "--try", given, "--", "true")
	expectCode(t, r, exitBusy, "lock --try on a held lock")
	shows("lock --try, busy", r, "") // names the lock by its base name
	r = runIn(t, t.TempDir(), quick, "", "update", "--timeout", "0.3", given, "--", "echo", "1")
	expectCode(t, r, exitBusy, "update --timeout 0.3 on a held lock")
	shows("update, timed out", r, "")
	h.cmd.Process.Kill()
	<-h.done
	h.done <- nil // for the cleanup

	r = runIn(t, t.TempDir(), quick, "", "lock", "/var/lock/"+name+"-missing/s", "--", "true")
	if r.code == 0 {
		t.Fatal("lock in a missing directory succeeded")
	}
	shows("lock, missing directory", r, "/var/lock/"+name+"-missing")

	r = runIn(t, t.TempDir(), quick, "", "update", given, "--", "true")
	expectCode(t, r, exitDataErr, "update whose CMD prints nothing")
	shows("update, empty output", r, given)

	if err := os.WriteFile(filepath.Join(target, name), []byte("1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(target, name), filepath.Join(target, name+".other")); err != nil {
		t.Fatal(err)
	}
	r = runIn(t, t.TempDir(), quick, "", "update", given, "--", "echo", "2")
	expectCode(t, r, exitUnsafe, "update of a hard-linked state file")
	shows("update, hard link", r, given)
}
