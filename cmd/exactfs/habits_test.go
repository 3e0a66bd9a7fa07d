//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
)

// TestLockRefusesMissingDirectory: a mistyped directory is an error that
// creates nothing; --mkdir creates it owner-only.
func TestLockRefusesMissingDirectory(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"lock", "typo/state.json", "--", "touch", "ran"},
		{"update", "typo/deeper/state.json", "--", "echo", "1"},
	} {
		r := runIn(t, dir, quick, "", args...)
		expectCode(t, r, exitIO, strings.Join(args, " "))
		if !strings.Contains(r.stderr, "does not exist") || !strings.Contains(r.stderr, "--mkdir") {
			t.Errorf("%s: the message does not say what is missing and what to do:\n%s", strings.Join(args, " "), r.stderr)
		}
		if _, err := os.Lstat(filepath.Join(dir, "typo")); !os.IsNotExist(err) {
			t.Fatalf("%s created the missing directory", strings.Join(args, " "))
		}
		if _, err := os.Lstat(filepath.Join(dir, "ran")); err == nil {
			t.Fatal("the command ran")
		}
	}
	r := runIn(t, dir, quick, "", "update", "--mkdir", "new/dir/state.json", "--", "echo", "1")
	expectCode(t, r, 0, "update --mkdir")
	fi, err := os.Stat(filepath.Join(dir, "new", "dir"))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("--mkdir: directory %v, %v; want 0700", fi, err)
	}
	if got := mustRead(t, filepath.Join(dir, "new", "dir", "state.json")); got != "1\n" {
		t.Fatalf("state after update --mkdir: %q", got)
	}
}

// TestUpdateRefusesEmptyOutput: a command that prints nothing leaves the
// state file byte- and inode-identical and exits 65; --allow-empty empties it.
func TestUpdateRefusesEmptyOutput(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	expectCode(t, runIn(t, dir, quick, "", "update", "state.json", "--", "echo", `{"n":1}`), 0, "update")
	before, _ := os.Stat(path)
	for _, args := range [][]string{
		{"update", "state.json", "--", "true"},
		{"update", "-c", "cat >/dev/null", "state.json"},
	} {
		r := runIn(t, dir, quick, "", args...)
		expectCode(t, r, exitDataErr, strings.Join(args, " "))
		if !strings.Contains(r.stderr, "printed nothing") || !strings.Contains(r.stderr, "--allow-empty") {
			t.Errorf("%s: unclear message:\n%s", strings.Join(args, " "), r.stderr)
		}
		after, _ := os.Stat(path)
		if got := mustRead(t, path); got != "{\"n\":1}\n" || !os.SameFile(before, after) {
			t.Fatalf("%s changed the state file: %q (same inode %v)", strings.Join(args, " "), got, os.SameFile(before, after))
		}
	}
	// Absent stays absent.
	expectCode(t, runIn(t, dir, quick, "", "update", "fresh", "--", "true"), exitDataErr, "update of an absent file with no output")
	if _, err := os.Lstat(filepath.Join(dir, "fresh")); !os.IsNotExist(err) {
		t.Fatal("an empty result created the state file")
	}
	expectCode(t, runIn(t, dir, quick, "", "update", "--allow-empty", "state.json", "--", "true"), 0, "update --allow-empty")
	if got := mustRead(t, path); got != "" {
		t.Fatalf("update --allow-empty left %q", got)
	}
	// The lock was released every time.
	expectCode(t, runIn(t, dir, quick, "", "lock", "--try", "state.json", "--", "true"), 0, "lock --try afterwards")
}

// TestUpdateKeepsMode: a 0644 state file stays 0644 (and 0640 stays 0640)
// across updates; a state file update creates is 0600.
func TestUpdateKeepsMode(t *testing.T) {
	dir := t.TempDir()
	defer syscall.Umask(syscall.Umask(0))
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604} {
		path := filepath.Join(dir, "s"+mode.String())
		if err := os.WriteFile(path, []byte("1\n"), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(path, mode)
		r := runIn(t, dir, quick, "", "update", filepath.Base(path), "--", "awk", "{ print $1 + 1 }")
		expectCode(t, r, 0, "update")
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode().Perm() != mode || mustRead(t, path) != "2\n" {
			t.Fatalf("after update of a %v file: %v %v %q", mode, fi.Mode(), err, mustRead(t, path))
		}
	}
	expectCode(t, runIn(t, dir, quick, "", "update", "new", "--", "echo", "x"), 0, "update of an absent file")
	if fi, _ := os.Lstat(filepath.Join(dir, "new")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("a new state file is %v, want 0600", fi.Mode())
	}
}

// TestFlockHabits: -n, -E 0 (silent success when busy), --quiet, -c,
// --try with --timeout refused, --shared refused with the reason.
func TestFlockHabits(t *testing.T) {
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")

	r := runIn(t, dir, quick, "", "lock", "-c", `echo "$EXACTFS_LOCK_PATH" > ran`, "s")
	expectCode(t, r, 0, "lock -c")
	if got := strings.TrimSpace(mustRead(t, ran)); got != filepath.Join(dir, "s.lock") {
		t.Fatalf("lock -c: the shell command saw EXACTFS_LOCK_PATH=%q", got)
	}
	os.Remove(ran)
	expectCode(t, runIn(t, dir, quick, "", "lock", "-c", "exit 7", "s"), 7, "lock -c 'exit 7'")
	expectCode(t, runIn(t, dir, quick, "", "lock", "-x", "-c", "exit 8", "s"), 8, "lock -x -c 'exit 8'")
	expectCode(t, runIn(t, dir, quick, "", "lock", "-c", "true", "s", "extra"), exitUsage, "lock -c with CMD arguments too")

	for _, args := range [][]string{
		{"lock", "--try", "--timeout", "3", "s", "--", "true"},
		{"lock", "-n", "-w", "0", "s", "--", "true"},
		{"update", "--try", "--timeout", "none", "s", "--", "true"},
	} {
		r := runIn(t, dir, quick, "", args...)
		expectCode(t, r, exitUsage, strings.Join(args, " "))
		if !strings.Contains(r.stderr, "give one of them") {
			t.Errorf("%s: %s", strings.Join(args, " "), r.stderr)
		}
	}
	for _, args := range [][]string{{"lock", "--shared", "s", "--", "true"}, {"lock", "-s", "s", "--", "true"}} {
		r := runIn(t, dir, quick, "", args...)
		expectCode(t, r, exitUsage, strings.Join(args, " "))
		if !strings.Contains(r.stderr, "exactly one holder") {
			t.Errorf("%s does not say why there is no shared mode: %s", strings.Join(args, " "), r.stderr)
		}
	}

	startHolder(t, dir, "s", 30)
	r = runIn(t, dir, quick, "", "lock", "-n", "-E", "0", "s", "--", "touch", "ran")
	expectCode(t, r, 0, "lock -n -E 0 on a held lock")
	if r.stderr != "" || r.stdout != "" {
		t.Errorf("lock -n -E 0 on a held lock printed: %s", r)
	}
	r = runIn(t, dir, quick, "", "lock", "--try", "--quiet", "s", "--", "touch", "ran")
	expectCode(t, r, exitBusy, "lock --try --quiet on a held lock")
	if r.stderr != "" {
		t.Errorf("lock --quiet printed: %q", r.stderr)
	}
	r = runIn(t, dir, quick, "", "update", "-q", "-w", "0.3", "-E", "3", "s", "--", "touch", "ran")
	expectCode(t, r, 3, "update -q -w 0.3 -E 3 on a held lock")
	if r.stderr != "" {
		t.Errorf("update -q printed: %q", r.stderr)
	}
	r = runIn(t, dir, quick, "", "lock", "-n", "s", "--", "touch", "ran")
	expectCode(t, r, exitBusy, "lock -n on a held lock")
	if !strings.Contains(r.stderr, "held by pid") {
		t.Errorf("without --quiet the busy lock is not explained: %s", r.stderr)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("a command ran without the lock")
	}
	// --quiet never hides an unsafe path.
	os.Symlink("elsewhere", filepath.Join(dir, "u.lock"))
	r = runIn(t, dir, quick, "", "lock", "-q", "-E", "0", "u", "--", "true")
	expectCode(t, r, exitUnsafe, "lock -q -E 0 with a symlink at the lock path")
	if r.stderr == "" {
		t.Error("an unsafe lock path was refused silently")
	}
}

// TestTimeoutNoneWaitsPastDefault: --timeout none waits longer than the
// 5 s default, until the holder is done.
func TestTimeoutNoneWaitsPastDefault(t *testing.T) {
	dir := t.TempDir()
	h := startHolder(t, dir, "s", 7)
	r := runIn(t, dir, 30*time.Second, "", "lock", "--timeout", "none", "s", "--", "touch", "ran")
	expectCode(t, r, 0, "lock --timeout none")
	if err := <-h.done; err != nil {
		t.Fatalf("holder: %v", err)
	}
	h.done <- nil // for the cleanup
	if r.elapsed < 5500*time.Millisecond {
		t.Fatalf("lock --timeout none returned after %v, before the holder's 7 s were over", r.elapsed)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err != nil {
		t.Fatal("the command did not run")
	}
}

// TestSystemSymlinkPrefix: /var/lock, where the system made it a root-owned
// symlink (Debian, Ubuntu), is usable; the lock lands in the target, and
// EXACTFS_LOCK_PATH, which is for programs, names it there (resolved: one
// spelling however STATEFILE was given; lockEnv). What lock and update
// print for a person shows the path as given (TestLockUpdateMessagesShowPathAsGiven).
func TestSystemSymlinkPrefix(t *testing.T) {
	fi, err := os.Lstat("/var/lock")
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Skip("/var/lock is not a symlink on this system")
	}
	target := exactfs.SystemPath("/var/lock")
	if target == "/var/lock" {
		t.Skipf("/var/lock is not a symlink the library trusts on this system (not root's alone)")
	}
	name := "exactfs-test-" + filepath.Base(t.TempDir())
	lock := filepath.Join(target, name+".lock")
	t.Cleanup(func() {
		for _, n := range []string{name, name + ".lock", name + ".lock.transition.owner"} {
			os.Remove(filepath.Join(target, n))
		}
		os.Remove(filepath.Join(target, ".gjc-delete-state-lock-spare-"+name+".lock.transition"))
	})
	r := runIn(t, t.TempDir(), quick, "", "lock", "/var/lock/"+name, "--", "sh", "-c", `echo "$EXACTFS_LOCK_PATH"`)
	expectCode(t, r, 0, "lock /var/lock/NAME")
	if strings.TrimSpace(r.stdout) != lock {
		t.Errorf("the lock is at %q, want %q", strings.TrimSpace(r.stdout), lock)
	}
	r = runIn(t, t.TempDir(), quick, "", "update", "/var/lock/"+name, "--", "echo", "1")
	expectCode(t, r, 0, "update /var/lock/NAME")
	expectCode(t, runIn(t, t.TempDir(), quick, "", "status", "/var/lock/"+name), 0, "status /var/lock/NAME")

	// The demo, whose directory is under a system symlink on macOS.
	r = runIn(t, t.TempDir(), time.Minute, "", "demo", "--dir", "/var/lock", "--workers", "2", "--updates", "5", "--chaos=false")
	demos, _ := filepath.Glob(filepath.Join(target, "exactfs-demo-*"))
	for _, d := range demos {
		t.Cleanup(func() { os.RemoveAll(d) })
	}
	expectCode(t, r, 0, "demo --dir /var/lock")
}

// TestUntrustedSymlinkAdvice: a symlink of the user's own on the path is
// refused, left alone, and the advice is not to remove it.
func TestUntrustedSymlinkAdvice(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "real"), 0o700)
	os.Symlink("real", filepath.Join(dir, "link"))
	for _, args := range [][]string{
		{"lock", "link/s", "--", "true"},
		{"update", "link/s", "--", "echo", "1"},
		{"stat", "link/s"},
	} {
		r := runIn(t, dir, quick, "", args...)
		expectCode(t, r, exitUnsafe, strings.Join(args, " "))
		if !strings.Contains(r.stderr, "link is a symlink (to real)") || !strings.Contains(r.stderr, "Do not remove it") ||
			strings.Contains(r.stderr, "remove what is there yourself") {
			t.Errorf("%s: advice:\n%s", strings.Join(args, " "), r.stderr)
		}
	}
	if fi, err := os.Lstat(filepath.Join(dir, "link")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symlink was touched")
	}
	if names, _ := os.ReadDir(filepath.Join(dir, "real")); len(names) != 0 {
		t.Fatalf("something was created through the symlink: %v", names)
	}
}
