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
