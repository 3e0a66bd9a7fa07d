package faults

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// exactfsBin is the CLI under test, built once by TestMain from the module
// this one replaces (../cmd/exactfs).
var exactfsBin string

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "exactfs-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	exactfsBin = filepath.Join(dir, "exactfs")
	build := exec.Command("go", "build", "-o", exactfsBin, "github.com/exactfs/exactfs/cmd/exactfs")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building exactfs:", err)
		return 1
	}
	// A private config root for the host secret, off every mount.
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	flag.Parse()
	if d, _ := time.ParseDuration(flag.Lookup("test.timeout").Value.String()); d > 0 {
		// Before the timeout panic, whose exit would hang on a file
		// still open on our own FUSE mount (see AbortAll).
		time.AfterFunc(max(d-15*time.Second, d*9/10), AbortAll)
	}
	return m.Run()
}

// run runs the CLI with stdin, for at most 20 s, and returns its exit
// status and stderr. Paths in args must be absolute: the child starts in a
// directory off the fault layer, because a child that touches the layer
// between fork and exec (a chdir onto it) blocks the thread that forked it
// with the P it holds, and a garbage collection in this process, which
// serves the layer, then waits for that thread forever.
func run(t *testing.T, stdin string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exactfsBin, args...)
	cmd.Dir = os.TempDir()
	cmd.Stdin = strings.NewReader(stdin)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("exactfs %v: did not finish in 20 s", args)
	case errors.As(err, &ee):
		return ee.ExitCode(), errb.String()
	case err != nil:
		t.Fatalf("exactfs %v: %v", args, err)
	}
	return 0, errb.String()
}

// TestCLIFaultEIO: `exactfs update` and `exactfs write` with one step of
// the durable write failing with EIO: exit 74, a message naming the file
// and the cause (and, after the directory fsync, that the change is made),
// the old bytes kept otherwise, and the same command succeeding once the
// fault clears.
func TestCLIFaultEIO(t *testing.T) {
	commands := []struct {
		name string
		args func(state string) []string
	}{
		{"update", func(state string) []string {
			return []string{"update", "--try", state, "--", "sh", "-c", "cat >/dev/null; printf '" + newState + "'"}
		}},
		{"write", func(state string) []string { return []string{"write", state} }},
	}
	for _, tc := range []struct {
		name  string
		rule  Rule
		after string
		say   string
	}{
		{"write-staged", Rule{Op: OpWrite, Match: stagingOf("state.json"), Errno: syscall.EIO}, oldState, "input/output error"},
		{"fsync-staged", Rule{Op: OpFsync, Match: stagingOf("state.json"), Errno: syscall.EIO}, oldState, "could not be made durable"},
		{"rename-not-made", Rule{Op: OpRename, Match: stagingOf("state.json"), Errno: syscall.EIO}, oldState, "input/output error"},
		{"fsync-directory", Rule{Op: OpFsyncDir, Match: named("d"), Errno: syscall.EIO}, newState, "the change is made"},
	} {
		for _, c := range commands {
			t.Run(tc.name+"/"+c.name, func(t *testing.T) {
				e := newEnv(t)
				e.f.Fail(tc.rule)
				code, stderr := run(t, newState, c.args(e.state)...)
				t.Logf("fault table: exactfs %s: exit %d: %s", c.name, code, strings.TrimSpace(stderr))
				if len(e.f.Hits()) == 0 {
					t.Fatal("the fault never struck")
				}
				if code != 74 || !strings.Contains(stderr, "state.json") || !strings.Contains(stderr, tc.say) {
					t.Errorf("exit %d, stderr %q; want 74 and a message naming state.json and saying %q", code, stderr, tc.say)
				}
				e.checkBytes(t, tc.after)
				e.checkNamed(t)
				e.f.Clear()
				if code, stderr := run(t, newState, c.args(e.state)...); code != 0 {
					t.Fatalf("exactfs %s once the fault cleared: exit %d: %s", c.name, code, stderr)
				}
				e.checkBytes(t, newState)
			})
		}
	}
}
