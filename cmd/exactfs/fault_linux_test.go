package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/exactfs/exactfs/internal/testfs"
)

// The fault table of issue 10 item 3 for the CLI (statelock's
// fault_linux_test.go has it for the library): on a loop-mounted
// filesystem (root; skipped elsewhere with the reason, failed in CI),
// `exactfs write` and `exactfs update` under ENOSPC, EROFS and EIO exit 74
// with a message that names the path and the errno's text; the file keeps
// its old bytes; status exits 0 and names every private name left; and once
// the fault clears, the same command succeeds. Each case logs
// "fault table:" with the exact stderr, for the closing note.

const (
	cliOld  = "old\n"
	cliNew  = "the new bytes of the state file\n"
	cliHeal = "healed\n"
)

// faultDir makes the directory d on the mount, with s.json holding cliOld
// written through the lock (so F.lock and the claim spare exist) when
// usedLock, else written plainly.
func faultDir(t *testing.T, mnt string, usedLock bool) string {
	t.Helper()
	dir := filepath.Join(mnt, "d")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if usedLock {
		expectCode(t, runIn(t, dir, quick, cliOld, "update", "s.json", "--", "sh", "-c", "cat >/dev/null; printf 'old\\n'"), 0, "update before the fault")
	} else if err := os.WriteFile(filepath.Join(dir, "s.json"), []byte(cliOld), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// faultHints are the words of the hint exactfs prints for each fault.
var faultHints = map[syscall.Errno]string{
	syscall.ENOSPC: "the filesystem is full",
	syscall.EROFS:  "the filesystem is read-only",
	syscall.EIO:    "the device reported an I/O error",
}

// expectFault: exit 74, stderr names the path, says errno's text and gives
// the fault's hint, and s.json still holds the old bytes.
func expectFault(t *testing.T, r result, errno syscall.Errno, dir, what string) {
	t.Helper()
	expectFaultExit(t, r, errno, dir, what)
	if got := mustRead(t, filepath.Join(dir, "s.json")); got != cliOld {
		t.Errorf("%s under the fault: s.json holds %q, want the old %q", what, got, cliOld)
	}
}

// expectFaultExit is expectFault without reading s.json (after a shutdown
// every read fails until the remount). The path named may be dir's, when
// the call that failed was on the directory.
func expectFaultExit(t *testing.T, r result, errno syscall.Errno, dir, what string) {
	t.Helper()
	t.Logf("fault table: %s: exit %d: %s", what, r.code, strings.TrimSpace(r.stderr))
	expectCode(t, r, exitIO, what+" under the fault")
	if !(strings.Contains(r.stderr, "s.json") || strings.Contains(r.stderr, dir)) || !strings.Contains(r.stderr, errno.Error()) {
		t.Errorf("%s: stderr does not name s.json (or %s) and %q:\n%s", what, dir, errno.Error(), r.stderr)
	}
	if !strings.Contains(r.stderr, faultHints[errno]) {
		t.Errorf("%s: stderr does not give the hint %q:\n%s", what, faultHints[errno], r.stderr)
	}
}

// expectNamed: status exits 0, the lock is not held, and every name in dir
// besides s.json and the lock's own files is residue that status names.
func expectNamed(t *testing.T, dir string) {
	t.Helper()
	r := runIn(t, dir, quick, "", "status", "--json", "s.json")
	expectCode(t, r, 0, "status after the fault")
	var st statusJSON
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r.stdout)
	}
	switch st.Lock {
	case "free", "released", "stale":
	default:
		t.Errorf("lock after the fault is %q, want free, released or stale:\n%s", st.Lock, r.stdout)
	}
	known := map[string]bool{
		"s.json": true, "s.json.lock": true, "s.json.lock.transition.owner": true,
		".gjc-delete-state-lock-spare-s.json.lock.transition": true,
	}
	if st.Claim.State != "none" {
		t.Errorf("transition claim after the fault is %q:\n%s", st.Claim.State, r.stdout)
	}
	for _, res := range st.Residue {
		known[res.Name] = true
		t.Logf("fault table: residue named by status: %+v", res)
	}
	for _, n := range dirNames(t, dir) {
		if !known[n] {
			t.Errorf("%s is left in %s and status does not name it:\n%s", n, dir, r.stdout)
		}
	}
}

// expectHeals: the update and the write succeed now.
func expectHeals(t *testing.T, dir string) {
	t.Helper()
	expectCode(t, runIn(t, dir, quick, "", "update", "--try", "s.json", "--", "sh", "-c", "cat >/dev/null; printf 'healed\\n'"), 0, "update once the fault cleared")
	if got := mustRead(t, filepath.Join(dir, "s.json")); got != cliHeal {
		t.Fatalf("after the healing update s.json holds %q", got)
	}
	expectCode(t, runIn(t, dir, quick, cliNew, "write", "s.json"), 0, "write once the fault cleared")
	if got := mustRead(t, filepath.Join(dir, "s.json")); got != cliNew {
		t.Fatalf("after the healing write s.json holds %q", got)
	}
}

// updateNew is the update that the fault must stop: it would write cliNew.
func updateNew(t *testing.T, dir string, during string) result {
	t.Helper()
	script := "cat >/dev/null; printf 'the new bytes of the state file\\n'"
	if during != "" {
		script = during + " && " + script
	}
	return runIn(t, dir, quick, "", "update", "--try", "s.json", "--", "sh", "-c", script)
}

func TestCLIFaultENOSPC(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mount func(t *testing.T) string
		fill  func(t *testing.T, mnt string) func()
	}{
		{"data", func(t *testing.T) string { return testfs.LoopExt4(t, 16) }, func(t *testing.T, mnt string) func() {
			p := testfs.FillData(t, mnt)
			return func() { os.Remove(p) }
		}},
		{"inodes", func(t *testing.T) string { return testfs.LoopExt4With(t, 16, []string{"-N", "64"}, "") }, func(t *testing.T, mnt string) func() {
			p := testfs.FillInodes(t, mnt)
			return func() { os.RemoveAll(p) }
		}},
	} {
		for _, used := range []bool{true, false} {
			name := tc.name + "/first-lock"
			if used {
				name = tc.name + "/lock-used"
			}
			t.Run(name, func(t *testing.T) {
				mnt := tc.mount(t)
				dir := faultDir(t, mnt, used)
				clear := tc.fill(t, mnt)
				expectFault(t, updateNew(t, dir, ""), syscall.ENOSPC, dir, "update")
				expectFault(t, runIn(t, dir, quick, cliNew, "write", "s.json"), syscall.ENOSPC, dir, "write")
				expectNamed(t, dir)
				clear()
				expectHeals(t, dir)
			})
		}
	}
}

func TestCLIFaultEROFS(t *testing.T) {
	t.Run("remounted", func(t *testing.T) {
		mnt := testfs.LoopExt4(t, 16)
		dir := faultDir(t, mnt, true)
		testfs.RemountReadOnly(t, mnt)
		expectFault(t, updateNew(t, dir, ""), syscall.EROFS, dir, "update")
		expectFault(t, runIn(t, dir, quick, cliNew, "write", "s.json"), syscall.EROFS, dir, "write")
		expectNamed(t, dir)
		testfs.RemountReadWrite(t, mnt)
		expectHeals(t, dir)
	})
	t.Run("forced-while-held", func(t *testing.T) {
		// The CMD of the update turns the filesystem read-only while
		// exactfs holds the lock. The lock files are written back first
		// (sync): the case where they are not is the known gap shown by
		// statelock's TestFaultEROFS.
		mnt := testfs.LoopExt4With(t, 16, nil, "errors=remount-ro")
		dir := faultDir(t, mnt, true)
		syscall.Sync()
		expectFault(t, updateNew(t, dir, testfs.ForceReadOnlyCommand(t, mnt)), syscall.EROFS, dir, "update")
		expectFault(t, runIn(t, dir, quick, cliNew, "write", "s.json"), syscall.EROFS, dir, "write")
		expectNamed(t, dir)
		testfs.Remount(t, mnt)
		expectNamed(t, dir)
		expectHeals(t, dir)
	})
}

func TestCLIFaultEIOShutdown(t *testing.T) {
	// xfs_io's shutdown is FS_IOC_SHUTDOWN without log flush, as
	// testfs.Shutdown; the CMD runs it while exactfs holds the lock.
	xfsIO := testfs.RequireCommand(t, "xfs_io")
	mnt := testfs.LoopXFS(t, 300)
	dir := faultDir(t, mnt, true)
	syscall.Sync()
	expectFaultExit(t, updateNew(t, dir, xfsIO+" -x -c shutdown "+mnt), syscall.EIO, dir, "update")
	// Run from elsewhere: even the chdir into dir fails now.
	expectFaultExit(t, runIn(t, t.TempDir(), quick, cliNew, "write", filepath.Join(dir, "s.json")), syscall.EIO, dir, "write")
	testfs.Remount(t, mnt)
	if got := mustRead(t, filepath.Join(dir, "s.json")); got != cliOld {
		t.Errorf("after the remount s.json holds %q, want the old %q", got, cliOld)
	}
	expectNamed(t, dir)
	expectHeals(t, dir)
}
