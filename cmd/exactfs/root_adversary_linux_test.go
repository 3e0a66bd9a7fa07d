package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Operator one-offs as root on a directory a user owns: what root leaves
// behind must stay usable by the user's own processes, or root is told.

// ownerUID is the owner of the object at p (lstat).
func ownerUID(t *testing.T, p string) int {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return int(st.Uid)
}

// rootEnv gives root a home of its own for its config root.
func rootEnv(t *testing.T, w *uidWorld) []string {
	t.Helper()
	if h := filepath.Join(w.top, "home-0"); fileExists(h) {
		return []string{"HOME=" + h}
	}
	return []string{"HOME=" + w.home(t, 0)}
}

func fileExists(p string) bool { _, err := os.Lstat(p); return err == nil }

// userDir is a 0700 directory of uid under w, with a home for its config
// root.
func userDir(t *testing.T, w *uidWorld, uid int) (dir string, env []string) {
	t.Helper()
	dir = filepath.Join(w.top, "data")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, uid); err != nil {
		t.Fatal(err)
	}
	return dir, []string{"HOME=" + w.home(t, uid)}
}

// TestAdversaryRootMkdirKeepsUserDir: root's `exactfs lock --mkdir
// sub/deeper/s.json` in a user's directory makes sub and sub/deeper the
// user's (as the lock's records already are the directory owner's), so the
// user's own update of that state file then works. Fails before the fix:
// the directories were root's, 0700, every record in them root's, and the
// user's update exited 74 (permission denied) for good.
func TestAdversaryRootMkdirKeepsUserDir(t *testing.T) {
	w := newUIDWorld(t)
	const uid = 4301
	dir, env := userDir(t, w, uid)
	expectCode(t, w.run(t, 0, 0, dir, rootEnv(t, w), "", "lock", "--mkdir", "sub/deeper/s.json", "--", "true"), 0, "root: lock --mkdir")
	for _, p := range []string{"sub", "sub/deeper", "sub/deeper/s.json.lock", "sub/deeper/s.json.lock.transition.owner"} {
		if got := ownerUID(t, filepath.Join(dir, p)); got != uid {
			t.Errorf("after root's lock --mkdir, %s is uid %d's, want uid %d's", p, got, uid)
		}
	}
	r := w.run(t, uid, uid, dir, env, "", "update", "sub/deeper/s.json", "--", "sh", "-c", "echo mine")
	expectCode(t, r, 0, "the user's update after root's lock --mkdir")
	if got := mustRead(t, filepath.Join(dir, "sub/deeper/s.json")); got != "mine\n" {
		t.Errorf("state file %q", got)
	}
}

// TestAdversaryRootMkdirLeavesPlantedDir: a directory that already exists
// at a name --mkdir would make (here another uid's, in a directory root
// owns) is used as it is: root never chowns what it did not make.
func TestAdversaryRootMkdirLeavesPlantedDir(t *testing.T) {
	w := newUIDWorld(t)
	const uid, other = 4302, 4303
	dir, _ := userDir(t, w, uid)
	planted := filepath.Join(dir, "sub")
	if err := os.Mkdir(planted, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chown(planted, other, other)
	r := w.run(t, 0, 0, dir, rootEnv(t, w), "", "lock", "--mkdir", "sub/x/s.json", "--", "true")
	expectCode(t, r, 0, "root: lock --mkdir")
	if got := ownerUID(t, planted); got != other {
		t.Errorf("root chowned a directory it did not make: now uid %d's", got)
	}
	if got := ownerUID(t, filepath.Join(planted, "x")); got != other {
		t.Errorf("sub/x is uid %d's, want its parent's owner %d", got, other)
	}
}

// TestAdversaryRootNewFileNoted: root's update and write of a state file
// that did not exist, in a directory uid 4304 owns, leave it the user's
// (exactfs.DirOwnerForNewFile, as the lock's records beside it are), with
// no note, and the user's own update then succeeds. The note is kept for
// what is still true: a state file that is already root's in the user's
// directory stays root's (a replace keeps its predecessor's owner), and
// root is told, with the chown that fixes it. A file already the user's
// gets no note. (Until the library's fix this test pinned the note on
// root's new files, which were root's 0600 and locked the user out.)
func TestAdversaryRootNewFileNoted(t *testing.T) {
	w := newUIDWorld(t)
	const uid = 4304
	dir, env := userDir(t, w, uid)
	for _, c := range []struct {
		name string
		args []string
		in   string
	}{
		{"update", []string{"update", "u.json", "--", "sh", "-c", "echo root"}, ""},
		{"write", []string{"write", "w.json"}, "root\n"},
	} {
		r := w.run(t, 0, 0, dir, rootEnv(t, w), c.in, c.args...)
		expectCode(t, r, 0, "root: "+c.name)
		file := c.args[1]
		if got := ownerUID(t, filepath.Join(dir, file)); got != uid {
			t.Errorf("root's %s of a new file in uid %d's directory made it uid %d's", c.name, uid, got)
		}
		if strings.Contains(r.stderr, "note:") {
			t.Errorf("root's %s of a new file: a note about a file that is the user's: %s", c.name, r.stderr)
		}
		expectCode(t, w.run(t, uid, uid, dir, env, "", "update", file, "--", "cat"), 0, "the user's update of root's new file")
	}
	// A file that is root's already stays root's, and root is told.
	rootFile := filepath.Join(dir, "r.json")
	if err := os.WriteFile(rootFile, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := w.run(t, 0, 0, dir, rootEnv(t, w), "", "update", "r.json", "--", "sh", "-c", "echo root")
	expectCode(t, r, 0, "root: update of its own file in the user's directory")
	for _, want := range []string{"note: r.json is root's (mode 0600)", "directory of uid 4304", "chown 4304:4304 r.json"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("root's update of its own file: stderr lacks %q: %s", want, r.stderr)
		}
	}
	expectCode(t, w.run(t, uid, uid, dir, env, "", "update", "r.json", "--", "cat"), exitIO, "the user's update of root's file")
	r = w.run(t, 0, 0, dir, rootEnv(t, w), "again\n", "write", "w.json")
	expectCode(t, r, 0, "root: write over the user's file")
	if strings.Contains(r.stderr, "note:") || ownerUID(t, filepath.Join(dir, "w.json")) != uid {
		t.Errorf("root's write over the user's own file: %s", r)
	}
}

// TestAdversaryKilledOneOffOfAnotherConfigRoot: root's one-off `exactfs
// lock` in a service's directory uses root's config root, so its record
// names another host id than the service's. SIGKILLed while it holds
// (OOM, a killed ssh session's process group), its record is judged
// "alive (foreign host)" by every process of the service for good: the
// service's next update times out (75) until a person runs recover with
// root's config root or rm --expect. Yet the record carries this boot's
// boot_id and a kernel slot (ofd_slot) that nobody holds: the kernel that
// would show the slot lock is this one, whatever the host id says, so the
// holder is provably dead. Here the two config roots stand for root's and
// the service's. Proposed fix (statelock's judge, or liveness): a record
// whose boot_id is this boot's and whose ofd_slot lock is not held is dead
// whatever its host id (a random 128-bit boot id is never another
// machine's; a container shares the kernel, its OFD locks included).
func TestAdversaryKilledOneOffOfAnotherConfigRoot(t *testing.T) {
	dir := t.TempDir()
	rootCfg := filepath.Join(dir, "root-config")
	if err := os.Mkdir(rootCfg, 0o700); err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(dir, "ready")
	holder := exec.Command(exactfsBin, "lock", "--config-root", rootCfg, "s.json", "--", "sh", "-c", "touch "+ready+"; exec sleep 30")
	holder.Dir = dir
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	deadline := time.Now().Add(quick)
	for !fileExists(ready) {
		if time.Now().After(deadline) {
			t.Fatal("the one-off holder never entered")
		}
		time.Sleep(10 * time.Millisecond)
	}
	holder.Process.Signal(syscall.SIGKILL)
	holder.Wait()
	// The proof is the kernel slot: a build or kernel that writes none (the
	// portable lane's fallbacks, a kernel without pidfs) leaves only the
	// host id, which keeps such a record alive (foreign host) by design.
	if b, err := os.ReadFile(filepath.Join(dir, "s.json.lock")); err != nil {
		t.Fatal(err)
	} else if !strings.Contains(string(b), `"ofd_slot":`) {
		t.Skipf("the holder's record carries no kernel slot here (%s): only the host id can judge it", b)
	}
	// The guard takes CMD's tree with it; the record stays, its slot free.
	r := runIn(t, dir, quick, "", "update", "--timeout", "2s", "s.json", "--", "echo", "service")
	expectCode(t, r, 0, "the service's update after root's killed one-off")
}
