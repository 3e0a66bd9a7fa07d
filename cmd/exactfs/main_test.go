//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// exactfsBin is the binary under test, built once by TestMain: the tests run
// it the way a user does, as a separate process.
var exactfsBin string

// configRoot is a private config root for the host identity, so tests never
// create a secret under the real user's config directory.
var configRoot string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	if os.Getenv(fakeEtcdEnv) != "" {
		// This test binary, copied to exactfs-etcd: show how it was run.
		fmt.Printf("argv %q\n", os.Args)
		return 42
	}
	dir, err := os.MkdirTemp("", "exactfs-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	exactfsBin = filepath.Join(dir, "exactfs")
	// Built without -race even under "go test -race": a race-instrumented
	// binary starts in seconds on a loaded machine, and the end-to-end tests
	// start hundreds of processes. The race detector still covers the test.
	build := exec.Command("go", "build", "-o", exactfsBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building exactfs:", err)
		return 1
	}
	configRoot = filepath.Join(dir, "config")
	os.Setenv("XDG_CONFIG_HOME", configRoot)
	return m.Run()
}

// result is one run of the binary.
type result struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("exit %d after %v\nstdout: %s\nstderr: %s", r.code, r.elapsed.Round(time.Millisecond), r.stdout, r.stderr)
}

// runIn runs the binary in dir with stdin, bounded by timeout: a hang is a
// failure, never a stuck test run.
func runIn(t testing.TB, dir string, timeout time.Duration, stdin string, args ...string) result {
	t.Helper()
	return runWith(t, dir, timeout, stdin, nil, args...)
}

// runWith is runIn with variables added to the environment.
func runWith(t testing.TB, dir string, timeout time.Duration, stdin string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exactfsBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = time.Second
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("exactfs %s: still running after %v (killed)\n%s", strings.Join(args, " "), timeout, r)
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("exactfs %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// expectCode fails the test unless r exited with want.
func expectCode(t testing.TB, r result, want int, what string) {
	t.Helper()
	if r.code != want {
		t.Fatalf("%s: want exit %d, got %s", what, want, r)
	}
}

func mustRead(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkPrompt fails the test unless r finished within limit, not counting
// the time this machine takes to start the binary at all (measured now with
// "exactfs version"): on a loaded CI machine a process start alone can take
// a good part of a second, and what is checked is that the command did not
// wait.
func checkPrompt(t testing.TB, r result, limit time.Duration, what string) {
	t.Helper()
	base := runIn(t, t.TempDir(), quick, "", "version").elapsed
	if r.elapsed > limit+base {
		t.Errorf("%s took %v (a bare start takes %v here); want at most %v more", what, r.elapsed, base, limit)
	}
}
