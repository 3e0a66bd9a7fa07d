//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/exactfs/exactfs/internal/testfs"
)

// ownerTestGroup creates a throwaway group and returns its gid.
func ownerTestGroup(t *testing.T) int {
	t.Helper()
	testfs.RequireRoot(t)
	groupadd := testfs.RequireCommand(t, "groupadd", "groupdel", "getent")
	name := "exfsc" + strconv.Itoa(os.Getpid()%100000)
	if out, err := exec.Command(groupadd, "--system", name).CombinedOutput(); err != nil {
		t.Fatalf("groupadd: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("groupdel", name).Run() })
	out, err := exec.Command("getent", "group", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	gid, err := strconv.Atoi(strings.Split(string(out), ":")[2])
	if err != nil {
		t.Fatal(err)
	}
	return gid
}

func ownerOfPath(t *testing.T, p string) (uid, gid int, perm os.FileMode, ino uint64) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return int(st.Uid), int(st.Gid), os.FileMode(st.Mode & 0o7777), st.Ino
}

// TestRootOneOffKeepsOwner: root's one-off `exactfs update` and `exactfs
// write` of a service's state file (uid 65534, group of its own, 0640)
// leave it the service's, so the service can go on writing it. Fails on
// 7b17545, where the replacement became root's (issue 18 item 6).
func TestRootOneOffKeepsOwner(t *testing.T) {
	gid := ownerTestGroup(t)
	for _, c := range []struct {
		name string
		args []string
		in   string
		want string
	}{
		{"update", []string{"update", "state.json", "--", "sh", "-c", "cat; echo +"}, "", "1\n+\n"},
		{"write", []string{"write", "state.json"}, "written\n", "written\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "state.json")
			if err := os.WriteFile(p, []byte("1\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(p, 65534, gid); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, 0o640); err != nil {
				t.Fatal(err)
			}
			_, _, _, before := ownerOfPath(t, p)
			expectCode(t, runIn(t, dir, quick, c.in, c.args...), 0, c.name)
			uid, g, perm, ino := ownerOfPath(t, p)
			if got := mustRead(t, p); got != c.want || ino == before {
				t.Fatalf("%s left %q in inode %d (was %d), want %q in a new inode", c.name, got, ino, before, c.want)
			}
			if uid != 65534 || g != gid || perm != 0o640 {
				t.Errorf("after root's %s: %d:%d %04o, want 65534:%d 0640", c.name, uid, g, perm, gid)
			}
		})
	}
}

// TestWriteRefusedForAnotherUsersFile: `exactfs write` run by an
// unprivileged user over another uid's file in a shared directory exits 74
// with a message that names the owner and what to do, and leaves the file
// byte- and inode-identical. Fails on 7b17545, where the write succeeded and
// the file became the caller's.
func TestWriteRefusedForAnotherUsersFile(t *testing.T) {
	testfs.RequireRoot(t)
	top, err := os.MkdirTemp("", "exactfs-cli-owner-")
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
	dir := filepath.Join(top, "shared")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777)
	p := filepath.Join(dir, "svc.json")
	if err := os.WriteFile(p, []byte("service state\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, _, _, before := ownerOfPath(t, p)

	// Run as a uid that is neither root nor the file's owner.
	const uid = 4242
	cmd := exec.Command(exe, "write", "svc.json")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(top, "config"))
	cmd.Stdin = strings.NewReader("intruder\n")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 74 {
		t.Fatalf("write as uid %d over a uid 65534 file: %v, want exit 74; output: %s", uid, err, out)
	}
	for _, want := range []string{"uid 65534", "Nothing was changed", "as root"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the message does not say %q: %s", want, out)
		}
	}
	t.Logf("refused: %s", out)
	u, g, perm, ino := ownerOfPath(t, p)
	if got := mustRead(t, p); got != "service state\n" || ino != before || u != 65534 || g != 65534 || perm != 0o644 {
		t.Fatalf("the file is now %q, inode %d (was %d), %d:%d %04o", got, ino, before, u, g, perm)
	}
	if names, _ := os.ReadDir(dir); len(names) != 1 {
		t.Fatalf("residue beside the file: %v", names)
	}
}
