//go:build linux && (amd64 || arm64)

package exactfs

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func init() {
	// eintr-rename <dir> <result file>: every renameat2 of this process
	// fails with EINTR (a seccomp filter), as under an endless signal
	// storm; records what RenameNoReplace and Publish then return.
	children["eintr-rename"] = func(args []string) error {
		dir, out := args[0], args[1]
		if err := failRenameat2WithEINTR(); err != nil {
			return err
		}
		type result struct{ Code, Commit, Err string }
		res := map[string]result{}
		c, err := RenameNoReplace(filepath.Join(dir, "src"), filepath.Join(dir, "dst"))
		res["RenameNoReplace"] = result{string(CodeOf(err)), c.String(), errString(err)}
		_, err = Publish(filepath.Join(dir, "published"), []byte("new"), 0o600)
		res["Publish"] = result{string(CodeOf(err)), "", errString(err)}
		b, _ := json.Marshal(res)
		if err := os.WriteFile(out, b, 0o600); err != nil {
			return err
		}
		os.Exit(0)
		return nil
	}
}

// failRenameat2WithEINTR installs, on every thread of the process, a
// seccomp filter under which renameat2 fails with EINTR and every other
// system call runs.
func failRenameat2WithEINTR() error {
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	filter := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // the system call number
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: unix.SYS_RENAMEAT2},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EINTR)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return errno
	}
	return nil
}

// A renameat2 that is interrupted every time (the reference's scenario
// 246): the bounded retry gives up with interrupted and not_committed,
// nothing moves, and Publish leaves neither the destination nor its
// staging file.
func TestRenameEINTRStorm(t *testing.T) {
	dir := t.TempDir()
	putFile(t, filepath.Join(dir, "src"), []byte("source"))
	srcIno := inode(t, filepath.Join(dir, "src"))
	out := filepath.Join(t.TempDir(), "result.json")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	args, _ := json.Marshal([]string{dir, out})
	cmd.Env = append(os.Environ(), childEnv+"=eintr-rename", childArgsEnv+"="+string(args))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v: %s", err, b)
	}
	var res map[string]struct{ Code, Commit, Err string }
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	r := res["RenameNoReplace"]
	if r.Code != string(CodeInterrupted) || r.Commit != NotCommitted.String() {
		t.Fatalf("RenameNoReplace under EINTR: %+v, want interrupted and %s", r, NotCommitted)
	}
	if p := res["Publish"]; p.Code != string(CodeInterrupted) {
		t.Fatalf("Publish under EINTR: %+v, want interrupted", p)
	}
	wantFile(t, filepath.Join(dir, "src"), []byte("source"), srcIno)
	names := listing(t, dir)
	if !slices.Equal(names, []string{"src"}) {
		t.Fatalf("after the interrupted calls %s holds %q", dir, names)
	}
	for _, n := range names {
		if strings.Contains(n, StagingSuffix) {
			t.Fatalf("staging residue %s", n)
		}
	}
}
