//go:build unix

package exactfs

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
)

// Crash tests re-execute the test binary as a child process that runs one
// entry of children and is killed (SIGKILL, by itself, at a hook) in the
// middle of an operation. The parent then inspects what is on disk.
const (
	childEnv     = "EXACTFS_TEST_CHILD"
	childArgsEnv = "EXACTFS_TEST_CHILD_ARGS"
)

// children are the programs a crash test can run in a child process. Each
// gets the JSON-decoded argument list and must not return if the test goes
// as planned (a hook kills the process first).
var children = map[string]func(args []string) error{}

func TestMain(m *testing.M) {
	if name := os.Getenv(childEnv); name != "" {
		var args []string
		if err := json.Unmarshal([]byte(os.Getenv(childArgsEnv)), &args); err != nil {
			fmt.Fprintln(os.Stderr, "child args:", err)
			os.Exit(3)
		}
		f := children[name]
		if f == nil {
			fmt.Fprintln(os.Stderr, "no child", name)
			os.Exit(3)
		}
		if err := f(args); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "child: the operation returned; it should have been killed")
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// killSelfAt sets hook name to SIGKILL this process: a crash at exactly that
// point, with no deferred cleanup and no buffered write flushed.
func killSelfAt(name string) {
	hook.Set(name, func(string) { syscall.Kill(os.Getpid(), syscall.SIGKILL) })
}

// runChild runs children[name] in a new process and requires that it was
// killed by SIGKILL (so the operation was interrupted at its hook).
func runChild(t *testing.T, name string, args ...string) {
	t.Helper()
	enc, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+name, childArgsEnv+"="+string(enc))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("child %s did not finish in 60 s; output: %s", name, stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child %s: %v (want death by SIGKILL); output: %s", name, err, stderr.String())
	}
	ws := ee.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child %s: %v (want death by SIGKILL); output: %s", name, err, stderr.String())
	}
}

// withHook sets a hook for the rest of the test.
func withHook(t *testing.T, name string, f func(path string)) {
	t.Helper()
	t.Cleanup(hook.Set(name, f))
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func putFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// plant writes data under a temporary name next to path and renames it over
// path: a successor that takes the name atomically, as another process would.
func plant(t testing.TB, path string, data []byte) uint64 {
	t.Helper()
	tmp := path + ".planted-tmp"
	putFile(t, tmp, data)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	return inode(t, path)
}

func lstatT(t testing.TB, path string) *syscall.Stat_t {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatalf("lstat %s: %v", path, err)
	}
	return &st
}

func inode(t testing.TB, path string) uint64 { t.Helper(); return lstatT(t, path).Ino }

// listing returns the sorted names in dir.
func listing(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func wantListing(t testing.TB, dir string, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := listing(t, dir); !slices.Equal(got, want) {
		t.Fatalf("%s holds %q, want %q", dir, got, want)
	}
}

// wantFile requires path to be the regular file with inode ino (0: any)
// holding exactly data.
func wantFile(t testing.TB, path string, data []byte, ino uint64) {
	t.Helper()
	st := lstatT(t, path)
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		t.Fatalf("%s is not a regular file (mode %o)", path, st.Mode)
	}
	if ino != 0 && st.Ino != ino {
		t.Fatalf("%s is inode %d, want %d", path, st.Ino, ino)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("%s holds %d bytes %q…, want %d bytes %q…", path, len(got), trunc(got), len(data), trunc(data))
	}
}

func wantAbsent(t testing.TB, path string) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("%s: lstat %v, want ENOENT", path, err)
	}
}

func trunc(b []byte) []byte {
	if len(b) > 16 {
		return b[:16]
	}
	return b
}

// wantCode requires err to carry code, both by CodeOf and by errors.Is with
// the code's sentinel.
func wantCode(t testing.TB, err error, code Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", code)
	}
	if got := CodeOf(err); got != code {
		t.Fatalf("got %v (code %q), want %s", err, got, code)
	}
	if !errors.Is(err, sentinels[code]) {
		t.Fatalf("errors.Is(%v, sentinel %s) is false", err, code)
	}
	var e *Error
	if !errors.As(err, &e) || e.Op == "" || e.Path == "" {
		t.Fatalf("%v: want an *Error with Op and Path", err)
	}
}

func mustCapture(t testing.TB, path string) ([]byte, Identity) {
	t.Helper()
	data, id, err := Capture(path)
	if err != nil {
		t.Fatal(err)
	}
	return data, id
}

// snapshotDir records every name under dir with its inode and bytes, to
// prove later that an operation touched nothing.
func snapshotDir(t testing.TB, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		fmt.Fprintf(&b, "%s ino=%d mode=%o nlink=%d size=%d", strings.TrimPrefix(p, dir), st.Ino, st.Mode, st.Nlink, st.Size)
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " sum=%x", sum256(data))
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			fmt.Fprintf(&b, " -> %s", target)
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func wantUnchanged(t testing.TB, dir, before string) {
	t.Helper()
	if after := snapshotDir(t, dir); after != before {
		t.Fatalf("the directory changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// setHook sets a hook and returns the function that removes it.
func setHook(name string, f func(path string)) (restore func()) { return hook.Set(name, f) }
