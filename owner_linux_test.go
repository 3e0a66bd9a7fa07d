//go:build linux

package exactfs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/internal/testfs"
)

// Tests of the ownership-preserving replace (issue 18 item 6): a replace
// gives its successor the predecessor's owner, group and mode, and a
// caller that cannot do that is refused with nothing changed.

// addGroup creates a throwaway group and returns its gid.
func addGroup(t *testing.T) uint32 {
	t.Helper()
	testfs.RequireRoot(t)
	groupadd := testfs.RequireCommand(t, "groupadd", "groupdel", "getent")
	name := fmt.Sprintf("exfsg%d%s", os.Getpid()%100000, strings.ToLower(randName(4)))
	if out, err := exec.Command(groupadd, "--system", name).CombinedOutput(); err != nil {
		t.Fatalf("groupadd %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() { exec.Command("groupdel", name).Run() })
	return uint32(lookupNum(t, "group", name))
}

// addUser creates a throwaway system user (its own primary group) and
// returns its uid and gid.
func addUser(t *testing.T) (uid, gid uint32) {
	t.Helper()
	testfs.RequireRoot(t)
	useradd := testfs.RequireCommand(t, "useradd", "userdel", "getent")
	name := fmt.Sprintf("exfsu%d%s", os.Getpid()%100000, strings.ToLower(randName(4)))
	if out, err := exec.Command(useradd, "--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", name).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		exec.Command("userdel", name).Run()
		exec.Command("groupdel", name).Run()
	})
	return uint32(lookupNum(t, "passwd", name)), uint32(lookupNum(t, "group", name))
}

func randName(n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := randBytes(n)
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	return string(b)
}

// lookupNum is the uid (db "passwd") or gid (db "group") of name.
func lookupNum(t *testing.T, db, name string) int {
	t.Helper()
	out, err := exec.Command("getent", db, name).Output()
	if err != nil {
		t.Fatalf("getent %s %s: %v", db, name, err)
	}
	f := strings.Split(strings.TrimSpace(string(out)), ":")
	if len(f) < 3 {
		t.Fatalf("getent %s %s: %q", db, name, out)
	}
	n, err := strconv.Atoi(f[2])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// putOwned puts data at path with owner uid:gid and mode perm, and returns
// its identity.
func putOwned(t *testing.T, path string, data []byte, uid, gid uint32, perm os.FileMode) Identity {
	t.Helper()
	putFile(t, path, data)
	must(t, os.Chown(path, int(uid), int(gid)))
	must(t, os.Chmod(path, perm))
	_, id := mustCapture(t, path)
	return id
}

// wantOwned fails unless path holds data with owner uid:gid and mode perm
// in a new inode (a replacement).
func wantOwned(t *testing.T, what, path string, data []byte, old Identity, uid, gid uint32, perm os.FileMode) {
	t.Helper()
	st := lstatT(t, path)
	if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
		t.Errorf("%s: %s holds %q, want %q", what, path, trunc(got), trunc(data))
	}
	if st.Ino == old.Ino {
		t.Errorf("%s: %s is still inode %d: not replaced", what, path, st.Ino)
	}
	if st.Uid != uid || st.Gid != gid || os.FileMode(st.Mode&0o7777) != perm {
		t.Errorf("%s: %s is %d:%d %04o, want the predecessor's %d:%d %04o", what, path, st.Uid, st.Gid, st.Mode&0o7777, uid, gid, perm)
	}
}

// Root replacing a service's file (uid 65534, 0600) and a group-readable
// 0640 file of another group keeps owner, group and mode, whether by
// WriteFile (with the mode passed as the perm, as Update and the CLI do)
// or by ReplaceExpected. Fails on the old code: the replacement was
// root's, and of root's group.
func TestReplaceKeepsOwnerAsRoot(t *testing.T) {
	testfs.RequireRoot(t)
	g := addGroup(t)
	cases := []struct {
		name     string
		uid, gid uint32
		perm     os.FileMode
	}{
		{"nobody 0600", 65534, 65534, 0o600},
		{"nobody, own group 0640", 65534, g, 0o640},
		{"root, other group 0640", 0, g, 0o640},
	}
	ops := map[string]func(p string, data []byte, old Identity) (Identity, error){
		"WriteFile": func(p string, data []byte, old Identity) (Identity, error) {
			return WriteFile(p, data, old.Mode.Perm())
		},
		"ReplaceExpected": func(p string, data []byte, old Identity) (Identity, error) {
			return ReplaceExpected(p, data, old)
		},
		"WriteFile with Predecessor": func(p string, data []byte, old Identity) (Identity, error) {
			return WriteFile(p, data, old.Mode.Perm(), Predecessor(old))
		},
	}
	for _, c := range cases {
		for opName, op := range ops {
			t.Run(opName+"/"+c.name, func(t *testing.T) {
				dir := t.TempDir()
				p := filepath.Join(dir, "state.json")
				old := putOwned(t, p, []byte("old"), c.uid, c.gid, c.perm)
				data := []byte(`{"n":1}`)
				id, err := op(p, data, old)
				if err != nil {
					t.Fatal(err)
				}
				wantOwned(t, opName, p, data, old, c.uid, c.gid, c.perm)
				if id.Uid != c.uid || id.Gid != c.gid || id.Mode.Perm() != c.perm {
					t.Errorf("returned identity says %d:%d %v", id.Uid, id.Gid, id.Mode)
				}
				wantListing(t, dir, "state.json")
			})
		}
	}
}

// WriteFile's perm is the new file's mode even over an existing file (it
// is an explicit argument), while the owner and group are the
// predecessor's; a new file is the caller's.
func TestWriteFilePermWinsOwnerKept(t *testing.T) {
	testfs.RequireRoot(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	old := putOwned(t, p, []byte("old"), 65534, 65534, 0o600)
	if _, err := WriteFile(p, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantOwned(t, "WriteFile 0644", p, []byte("new"), old, 65534, 65534, 0o644)
	q := filepath.Join(dir, "fresh")
	if _, err := WriteFile(q, []byte("x"), 0o640); err != nil {
		t.Fatal(err)
	}
	if st := lstatT(t, q); st.Uid != 0 || st.Mode&0o777 != 0o640 {
		t.Fatalf("a new file is %d %04o, want the caller's, 0640", st.Uid, st.Mode&0o777)
	}
}

func init() {
	// owner-write <op> <path> <data>: run one replace of path as this
	// (unprivileged) process and print {"code": ..., "msg": ...}.
	children["owner-write"] = func(args []string) error {
		op, path, data := args[0], args[1], []byte(args[2])
		var err error
		switch op {
		case "WriteFile":
			_, err = WriteFile(path, data, 0o644)
		case "ReplaceExpected":
			var want Identity
			if want, err = IdentityOf(path); err == nil {
				_, err = ReplaceExpected(path, data, want)
			}
		default:
			err = fmt.Errorf("unknown op %q", op)
		}
		res := map[string]string{"code": string(CodeOf(err))}
		if err != nil {
			res["msg"] = err.Error()
		} else {
			res["code"] = "ok"
		}
		json.NewEncoder(os.Stdout).Encode(res)
		os.Exit(0)
		return nil
	}
}

// runAs runs the owner-write child as uid:gid (with groups as its
// supplementary groups) from a copy of the test binary it can execute, and
// returns its code and message.
func runAs(t *testing.T, exe string, uid, gid uint32, groups []uint32, args ...string) (code, msg string) {
	t.Helper()
	enc, _ := json.Marshal(args)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=owner-write", childArgsEnv+"="+string(enc))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: groups}}
	cmd.Dir = "/"
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child as %d:%d: %v: %s", uid, gid, err, stderr.String())
	}
	var res map[string]string
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("child printed %q: %v", out, err)
	}
	return res["code"], res["msg"]
}

// sharedDir makes a world-writable (not sticky) directory that another
// user can reach, and copies the test binary beside it for that user to
// run.
func sharedDir(t *testing.T) (dir, exe string) {
	t.Helper()
	top, err := os.MkdirTemp("", "exactfs-owner-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	must(t, os.Chmod(top, 0o755))
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	exe = filepath.Join(top, "exactfs.test")
	must(t, os.WriteFile(exe, self, 0o755))
	dir = filepath.Join(top, "shared")
	must(t, os.Mkdir(dir, 0o777))
	must(t, os.Chmod(dir, 0o777))
	return dir, exe
}

// An unprivileged caller replacing another uid's file in a shared
// directory, or its own file of a group it is not in, is refused with
// permission_denied naming the owner, and the file stays byte- and
// inode-identical with nothing left beside it. It keeps a group it is a
// member of. Fails on the old code: the replace succeeded and the file
// became the caller's.
func TestReplaceRefusedWhenOwnerCannotBeKept(t *testing.T) {
	testfs.RequireRoot(t)
	uid, gid := addUser(t)
	other := addGroup(t)
	dir, exe := sharedDir(t)
	for _, op := range []string{"WriteFile", "ReplaceExpected"} {
		t.Run(op+"/another uid's file", func(t *testing.T) {
			p := filepath.Join(dir, "svc.json")
			old := putOwned(t, p, []byte("service state"), 65534, 65534, 0o644)
			defer os.Remove(p)
			code, msg := runAs(t, exe, uid, gid, nil, op, p, "intruder")
			if code != string(CodePermissionDenied) {
				t.Fatalf("%s as uid %d: %s (%s), want permission_denied", op, uid, code, msg)
			}
			t.Logf("refused: %s", msg)
			for _, want := range []string{"uid 65534", "Nothing was changed", "as root"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not say %q", msg, want)
				}
			}
			wantFile(t, p, []byte("service state"), old.Ino)
			if st := lstatT(t, p); st.Uid != 65534 || st.Gid != 65534 || st.Mode&0o777 != 0o644 {
				t.Errorf("the file is now %d:%d %04o", st.Uid, st.Gid, st.Mode&0o777)
			}
			wantListing(t, dir, "svc.json")
		})
		t.Run(op+"/own file, foreign group", func(t *testing.T) {
			p := filepath.Join(dir, "mine.json")
			old := putOwned(t, p, []byte("shared with a group"), uid, other, 0o640)
			defer os.Remove(p)
			code, msg := runAs(t, exe, uid, gid, nil, op, p, "regrouped")
			if code != string(CodePermissionDenied) || !strings.Contains(msg, "gid "+strconv.Itoa(int(other))) {
				t.Fatalf("%s: %s (%s), want permission_denied naming gid %d", op, code, msg, other)
			}
			wantFile(t, p, []byte("shared with a group"), old.Ino)
			wantListing(t, dir, "mine.json")
		})
		t.Run(op+"/own file, a group it is in", func(t *testing.T) {
			p := filepath.Join(dir, "ours.json")
			old := putOwned(t, p, []byte("old"), uid, other, 0o640)
			defer os.Remove(p)
			code, msg := runAs(t, exe, uid, gid, []uint32{other}, op, p, "new")
			if code != "ok" {
				t.Fatalf("%s: %s (%s)", op, code, msg)
			}
			perm := os.FileMode(0o640)
			if op == "WriteFile" {
				perm = 0o644 // the child's explicit perm
			}
			wantOwned(t, op, p, []byte("new"), old, uid, other, perm)
		})
	}
}

// In a shared sticky directory (/tmp-like: 1777, owned by root) a file
// another uid planted is neither handed root's bytes nor taken from its
// owner: root's replace is refused, naming the owner, with nothing
// changed. In a sticky directory the file's owner owns, the owner is kept.
// Fails on the old code (the replace succeeded, as root's file).
func TestReplaceInSharedStickyDir(t *testing.T) {
	testfs.RequireRoot(t)
	for _, op := range []string{"WriteFile", "ReplaceExpected"} {
		for _, dirOwner := range []uint32{0, 65534} {
			t.Run(fmt.Sprintf("%s/dir of uid %d", op, dirOwner), func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "spool")
				must(t, os.Mkdir(dir, 0o777))
				must(t, os.Chmod(dir, 0o777|os.ModeSticky))
				must(t, os.Chown(dir, int(dirOwner), int(dirOwner)))
				p := filepath.Join(dir, "job")
				old := putOwned(t, p, []byte("planted"), 65534, 65534, 0o644)
				var err error
				if op == "WriteFile" {
					_, err = WriteFile(p, []byte("root's secret"), 0o600)
				} else {
					_, err = ReplaceExpected(p, []byte("root's secret"), old)
				}
				if dirOwner == 65534 {
					if err != nil {
						t.Fatal(err)
					}
					perm := os.FileMode(0o600)
					if op == "ReplaceExpected" {
						perm = 0o644
					}
					wantOwned(t, op, p, []byte("root's secret"), old, 65534, 65534, perm)
					return
				}
				wantCode(t, err, CodePermissionDenied)
				if !strings.Contains(err.Error(), "sticky") || !strings.Contains(err.Error(), "uid 65534") {
					t.Errorf("message does not explain: %v", err)
				}
				t.Logf("refused: %v", err)
				wantFile(t, p, []byte("planted"), old.Ino)
				wantListing(t, dir, "job")
			})
		}
	}
}

// With Predecessor, WriteFile takes the successor's owner from the
// caller's capture and does not look at the name again (the lstat it
// saves): a file put at the name after the capture, owned by root, does
// not change who the successor belongs to. A zero Predecessor (nothing
// was there) is no promise: the name is looked at, and a file that
// appeared keeps its owner. An identity that is not a regular file's is
// refused with nothing changed. Fails if Predecessor is ignored: the
// successor is root's.
func TestWriteFilePredecessorStandsForTheLstat(t *testing.T) {
	testfs.RequireRoot(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	old := putOwned(t, p, []byte("old"), 65534, 65534, 0o600)
	// Outside the lock, root puts a file of its own at the name.
	if err := os.WriteFile(p+".tmp", []byte("root's"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".tmp", p); err != nil {
		t.Fatal(err)
	}
	_, roots := mustCapture(t, p)
	data := []byte(`{"n":2}`)
	if _, err := WriteFile(p, data, 0o600, Predecessor(old)); err != nil {
		t.Fatal(err)
	}
	wantOwned(t, "WriteFile with Predecessor", p, data, roots, 65534, 65534, 0o600)

	q := filepath.Join(dir, "appeared.json")
	qold := putOwned(t, q, []byte("old"), 65534, 65534, 0o600)
	if _, err := WriteFile(q, data, 0o600, Predecessor(Identity{})); err != nil {
		t.Fatal(err)
	}
	wantOwned(t, "WriteFile with a zero Predecessor", q, data, qold, 65534, 65534, 0o600)

	dirID := old
	dirID.Mode = os.ModeDir | 0o700
	_, err := WriteFile(p, []byte("no"), 0o600, Predecessor(dirID))
	wantCode(t, err, CodeNotRegularFile)
	if got, _ := os.ReadFile(p); !bytes.Equal(got, data) {
		t.Fatalf("a refused write changed the file: %q", got)
	}
	wantListing(t, dir, "appeared.json", "state.json")
}

// TestCaptureReplaceable: a read for a replace refuses, before reading a
// byte (hook CaptureRead never fires), the file WriteFile would refuse to
// replace because of its owner: another uid's in a shared sticky
// directory, even for root, with WriteFile's own error; and captures it
// where the replace could keep its owner (root, a directory that is not
// shared sticky).
func TestCaptureReplaceable(t *testing.T) {
	testfs.RequireRoot(t)
	for _, sticky := range []bool{true, false} {
		t.Run(fmt.Sprintf("sticky=%v", sticky), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "spool")
			must(t, os.Mkdir(dir, 0o777))
			mode := os.FileMode(0o777)
			if sticky {
				mode |= os.ModeSticky
			}
			must(t, os.Chmod(dir, mode))
			p := filepath.Join(dir, "job")
			putOwned(t, p, []byte("planted"), 65534, 65534, 0o644)
			d, err := OpenDir(dir)
			must(t, err)
			defer d.Close()
			read := false
			defer hook.Set(hook.CaptureRead, func(string) { read = true })()
			b, _, err := d.CaptureReplaceable("job")
			if !sticky {
				if err != nil || string(b) != "planted" {
					t.Fatalf("CaptureReplaceable = %q, %v; want the file (root keeps its owner)", b, err)
				}
				return
			}
			_, werr := d.WriteFile("job", []byte("x"), 0o644)
			if !errors.Is(err, ErrPermissionDenied) || werr == nil || err.Error() != strings.Replace(werr.Error(), "write ", "capture ", 1) {
				t.Fatalf("CaptureReplaceable = %v; want WriteFile's refusal %v", err, werr)
			}
			if read {
				t.Fatal("the refused file was read")
			}
		})
	}
}
