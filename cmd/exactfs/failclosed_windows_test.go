package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/exactfs/exactfs/internal/testfs"
)

// runAsCLIEnv makes this test binary run as the exactfs command (see
// TestMain), so the CLI is tested as a process, with its exit status,
// without a Go toolchain on the Windows side to build exactfs.exe.
const runAsCLIEnv = "EXACTFS_TEST_RUN_AS_CLI"

// TestMain: on Windows the package's other TestMain (which builds
// exactfs with "go build") is not compiled; this one runs the command
// itself when runAsCLIEnv is set, and the tests otherwise.
func TestMain(m *testing.M) {
	if plantedCmd() {
		os.Exit(99)
	}
	if os.Getenv(runAsCLIEnv) == "1" {
		main()
	}
	if role := os.Getenv(jobRoleEnv); role != "" {
		os.Exit(jobRole(role))
	}
	os.Exit(m.Run())
}

// TestWindowsCLIFailsClosed: without the opt-in (EXACTFS_WINDOWS=unverified,
// internal/sys's gate), exactfs update, lock, status and stat must exit
// with a failure status and a message that says Windows is unsupported and
// names the opt-in, without running the command and without creating
// anything: no lock record, no config root, no file CMD would have made.
// The same holds with the variable set to another value.
func TestWindowsCLIFailsClosed(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	appData := filepath.Join(dir, "appdata") // the default config root's parent, as %APPDATA% exists
	// A --config-root that does not exist is refused before anything else
	// (usage of the CLI, not Windows); the case below must reach the lock.
	config := filepath.Join(dir, "config")
	for _, d := range []string{work, appData, config} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const content = `{"n":1}`
	state := filepath.Join(work, "state.json")
	if err := os.WriteFile(state, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	// CMD would leave ran.txt in the working directory.
	cmd := []string{"--", "cmd", "/c", "echo ran>ran.txt"}
	before := testfs.Tree(t, dir)

	type tcase struct {
		name  string
		args  []string
		optIn string // the value of EXACTFS_WINDOWS, "" for none
	}
	cases := []tcase{
		{"update", append([]string{"update", "state.json"}, cmd...), ""},
		{"update --config-root", append([]string{"update", "--config-root", filepath.Join(dir, "config"), "state.json"}, cmd...), ""},
		{"lock", append([]string{"lock", "state.json"}, cmd...), ""},
		{"status", []string{"status", "state.json"}, ""},
		{"stat", []string{"stat", "state.json"}, ""},
	}
	// A value that is not exactly the opt-in keeps the gate shut.
	cases = append(cases, tcase{"update with EXACTFS_WINDOWS=1", cases[0].args, "1"},
		tcase{"stat with EXACTFS_WINDOWS=Unverified", cases[4].args, "Unverified"})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := exec.Command(exe, tc.args...)
			c.Dir = work
			c.Env = append(envWithoutOptIn(), runAsCLIEnv+"=1", "APPDATA="+appData, "XDG_CONFIG_HOME=")
			if tc.optIn != "" {
				c.Env = append(c.Env, optInEnv+"="+tc.optIn)
			}
			var stdout, stderr bytes.Buffer
			c.Stdout, c.Stderr = &stdout, &stderr
			err := c.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("exactfs %s: %v, want a failure exit status (stdout %q, stderr %q)", strings.Join(tc.args, " "), err, stdout.String(), stderr.String())
			}
			code := exit.ExitCode()
			t.Logf("exactfs %s: exit %d: %s", strings.Join(tc.args, " "), code, strings.TrimSpace(stderr.String()))
			if code == exitOK || code == exitUsage {
				t.Fatalf("exit %d, want a failure status that is not a usage error", code)
			}
			if !strings.Contains(stderr.String(), "unsupported on windows") {
				t.Fatalf("stderr does not say that Windows is unsupported: %q", stderr.String())
			}
			if !strings.Contains(stderr.String(), "set EXACTFS_WINDOWS=unverified") {
				t.Fatalf("stderr does not name the opt-in: %q", stderr.String())
			}
			if after := testfs.Tree(t, dir); !slices.Equal(after, before) {
				t.Fatalf("exactfs %s changed the directory:\nbefore %q\nafter  %q", tc.name, before, after)
			}
			if b, err := os.ReadFile(state); err != nil || string(b) != content {
				t.Fatalf("exactfs %s changed the state file: %q, %v", tc.name, b, err)
			}
		})
	}
}
