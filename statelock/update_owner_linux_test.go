//go:build linux

package statelock

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/exactfs/exactfs/internal/testfs"
)

// TestUpdateKeepsOwner: root's one-off Update of a service's state file
// (uid 65534, 0600; and 0640 with a group of its own) leaves it the
// service's: same uid, gid and mode, new bytes in a new inode. Fails on
// 7b17545, where the replacement became root's, of root's group (issue 18
// item 6: the service then failed with exit 74).
func TestUpdateKeepsOwner(t *testing.T) {
	testfs.RequireRoot(t)
	groupadd := testfs.RequireCommand(t, "groupadd", "groupdel", "getent")
	name := "exfsu" + strconv.Itoa(os.Getpid()%100000)
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
	for _, c := range []struct {
		uid, gid int
		perm     os.FileMode
	}{{65534, 65534, 0o600}, {65534, gid, 0o640}, {0, gid, 0o640}} {
		e := newEnv(t)
		if err := os.WriteFile(e.state, []byte("1"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(e.state, c.uid, c.gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(e.state, c.perm); err != nil {
			t.Fatal(err)
		}
		before := updateOwnerTestInode(t, e.state)
		inc := func(old []byte) ([]byte, error) { return append(old, '+'), nil }
		if err := Update(context.Background(), e.state, inc, e.opts()...); err != nil {
			t.Fatal(err)
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(e.state, &st); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(e.state)
		if string(got) != "1+" || st.Ino == before {
			t.Fatalf("Update left %q in inode %d (was %d)", got, st.Ino, before)
		}
		if int(st.Uid) != c.uid || int(st.Gid) != c.gid || os.FileMode(st.Mode&0o7777) != c.perm {
			t.Errorf("after root's Update of a %d:%d %04o state file: %d:%d %04o", c.uid, c.gid, c.perm, st.Uid, st.Gid, st.Mode&0o7777)
		}
	}
}

func updateOwnerTestInode(t *testing.T, p string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}
