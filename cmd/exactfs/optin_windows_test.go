package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/exactfs/exactfs/internal/sys"
	"github.com/exactfs/exactfs/internal/testfs"
	"golang.org/x/sys/windows"
)

// optInEnv is internal/sys's opt-in variable (EXACTFS_WINDOWS); the
// tests spell out its value, "unverified", so that a change of it shows.
const optInEnv = sys.OptInEnv

// envWithoutOptIn is os.Environ without the opt-in (names are
// case-insensitive on Windows), so a test decides the gate of the
// processes it starts whatever the environment of the test run.
func envWithoutOptIn() []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.EqualFold(k, optInEnv) {
			env = append(env, kv)
		}
	}
	return env
}

type cliResult struct {
	code           int
	stdout, stderr string
}

// runCLI runs this test binary as exactfs in dir, with EXACTFS_WINDOWS
// set to optIn (nil: unset).
func runCLI(t *testing.T, dir string, optIn *string, stdin string, args ...string) cliResult {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(exe, args...)
	c.Dir = dir
	c.Env = append(envWithoutOptIn(), runAsCLIEnv+"=1")
	if optIn != nil {
		c.Env = append(c.Env, optInEnv+"="+*optIn)
	}
	c.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err = c.Run()
	r := cliResult{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("exactfs %s: %v", strings.Join(args, " "), err)
	}
	t.Logf("exactfs %s (%s=%s): exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), optInEnv, show(optIn), r.code, r.stdout, r.stderr)
	return r
}

func show(v *string) string {
	if v == nil {
		return "(unset)"
	}
	return strconv.Quote(*v)
}

func str(s string) *string { return &s }

// unwrapped joins doctor's wrapped lines, so a sentence can be looked for
// wherever the wrap fell.
func unwrapped(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestWindowsOptInOpensTheCLI: with EXACTFS_WINDOWS=unverified exactly,
// exactfs stat and write work on Windows (under Wine: they need no host
// identity, which Wine's missing DACLs keep from every config root);
// without it, or with another value, the same commands refuse with exit
// 74, name the opt-in and change nothing. On the old code every case
// refused.
func TestWindowsOptInOpensTheCLI(t *testing.T) {
	for _, tc := range []struct {
		name  string
		optIn *string
		open  bool
	}{
		{"unset", nil, false},
		{"yes", str("yes"), false},
		{"trailing space", str("unverified "), false},
		{"opt-in", str("unverified"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			state := filepath.Join(dir, "state.json")
			if err := os.WriteFile(state, []byte(`{"n":1}`), 0o644); err != nil {
				t.Fatal(err)
			}
			before := testfs.Tree(t, dir)
			st := runCLI(t, dir, tc.optIn, "", "stat", "state.json")
			w := runCLI(t, dir, tc.optIn, `{"n":2}`, "write", "state.json")
			b, err := os.ReadFile(state)
			if err != nil {
				t.Fatal(err)
			}
			if tc.open {
				if st.code != 0 || !strings.Contains(st.stdout, "kind:   file") {
					t.Errorf("stat with the opt-in: exit %d, want 0 and the file's identity", st.code)
				}
				if w.code != 0 || string(b) != `{"n":2}` {
					t.Errorf("write with the opt-in: exit %d, state %q; want 0 and the new contents", w.code, b)
				}
				return
			}
			for _, r := range []cliResult{st, w} {
				if r.code != exitIO || !strings.Contains(r.stderr, "set EXACTFS_WINDOWS=unverified") {
					t.Errorf("without the opt-in: exit %d, stderr %q; want %d and the opt-in named", r.code, r.stderr, exitIO)
				}
			}
			if after := testfs.Tree(t, dir); !slices.Equal(after, before) || string(b) != `{"n":1}` {
				t.Errorf("without the opt-in the directory changed: %q -> %q, state %q", before, after, b)
			}
		})
	}
}

// TestWindowsDoctorSaysWhetherTheGateIsOpen: doctor's first words on
// Windows are the gate's state and why: shut, because EXACTFS_WINDOWS is
// not set or is not exactly "unverified" (naming the opt-in and the README
// section), or open because it is. On the old code doctor said only that
// the lock refuses, whatever the environment.
func TestWindowsDoctorSaysWhetherTheGateIsOpen(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		optIn *string
		want  []string
	}{
		{nil, []string{"Windows gate: shut (EXACTFS_WINDOWS is not set).", "set EXACTFS_WINDOWS=unverified", sys.OptInDoc}},
		{str("on"), []string{`Windows gate: shut (EXACTFS_WINDOWS is "on", not exactly "unverified").`, "set EXACTFS_WINDOWS=unverified"}},
		{str("unverified"), []string{"Windows gate: open (EXACTFS_WINDOWS=unverified is set: the user accepts what is verified under Wine only).", sys.OptInDoc}},
	} {
		r := runCLI(t, dir, tc.optIn, "", "doctor", dir)
		if r.code != 0 {
			t.Fatalf("doctor (%s): exit %d", show(tc.optIn), r.code)
		}
		out := unwrapped(r.stdout)
		for _, want := range tc.want {
			if !strings.Contains(out, want) {
				t.Errorf("doctor (%s=%s) lacks %q", optInEnv, show(tc.optIn), want)
			}
		}
	}
}

// demoRow returns the number in the demo table's row named name.
func demoRow(t *testing.T, out, name string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(name) + `\s+(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the demo table has no row %q:\n%s", name, out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestWindowsDemo: exactfs demo on Windows with the opt-in, workers
// contending on one state file, without and with chaos: workers killed
// with TerminateProcess inside their critical section and restarted, every
// killed holder's lock taken over, no update lost or applied twice, no
// two holds overlapping (QueryPerformanceCounter). Small, because under
// Wine a process takes up to a second to start and an update a few
// hundred milliseconds; .ci/wine-lane.sh runs a larger demo and prints
// its table. Without the opt-in the demo refuses, naming it, and creates
// nothing. On the old code it refused in every case.
func TestWindowsDemo(t *testing.T) {
	dir := t.TempDir()
	r := runCLI(t, dir, nil, "", "demo", "--workers", "2", "--updates", "2", "--dir", dir)
	if r.code != exitIO || !strings.Contains(r.stderr, "set EXACTFS_WINDOWS=unverified") {
		t.Errorf("demo without the opt-in: exit %d, want %d and the opt-in named", r.code, exitIO)
	}
	if after := testfs.Tree(t, dir); len(after) != 0 {
		t.Errorf("demo without the opt-in created %q", after)
	}

	for _, tc := range []struct {
		name  string
		args  []string
		kills bool
	}{
		{"plain", []string{"--workers", "2", "--updates", "4", "--chaos=false"}, false},
		{"chaos", []string{"--workers", "2", "--updates", "6", "--kill-every", "2", "--seed", "7"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r := runCLI(t, dir, str("unverified"), "", append([]string{"demo", "--dir", dir}, tc.args...)...)
			if r.code != 0 {
				t.Fatalf("demo %s: exit %d, want 0", tc.name, r.code)
			}
			out := r.stdout
			want := demoRow(t, out, "expected updates")
			if got := demoRow(t, out, "found in the state file"); got != want {
				t.Errorf("found %d updates, expected %d", got, want)
			}
			for _, row := range []string{"lost updates", "duplicated updates", "overlapping holds"} {
				if got := demoRow(t, out, row); got != 0 {
					t.Errorf("%s = %d, want 0", row, got)
				}
			}
			if !strings.Contains(out, "checked by QueryPerformanceCounter") || !strings.Contains(out, "PASS") {
				t.Errorf("the table lacks the Windows clock or the PASS line")
			}
			if !tc.kills {
				return
			}
			kills := demoRow(t, out, "workers killed with TerminateProcess")
			if kills == 0 {
				t.Errorf("the chaos demo killed no worker")
			}
			if got := demoRow(t, out, "locks reclaimed from killed holders"); got != kills {
				t.Errorf("%d kills inside the critical section, but %d reclaims", kills, got)
			}
		})
	}
}

// TestWindowsUpdateWithOptIn: exactfs update with the opt-in. On real
// Windows it runs CMD under the lock and replaces the state file with its
// output. Under Wine, which keeps no DACL, the config root cannot be proved
// owner-only, so update refuses before taking the lock (exit 74, the state
// file unchanged) and says where the config root is on Windows
// (%APPDATA%\exactfs) and that Wine keeps no DACL; the old hint named the
// Unix places ($XDG_CONFIG_HOME/exactfs, ~/.config/exactfs) and HOME.
func TestWindowsUpdateWithOptIn(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	if err := os.WriteFile(state, []byte(`{"n":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(exe, "update", "state.json", "--", "cmd", "/c", `echo {"n":2}`)
	c.Dir = dir
	c.Env = append(envWithoutOptIn(), runAsCLIEnv+"=1", optInEnv+"=unverified",
		"APPDATA="+filepath.Join(dir, "appdata"), "XDG_CONFIG_HOME=")
	if err := os.Mkdir(filepath.Join(dir, "appdata"), 0o755); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err = c.Run()
	t.Logf("exactfs update (opt-in): %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	b, rerr := os.ReadFile(state)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() != nil { // real Windows
		if err != nil || !strings.HasPrefix(string(b), `{"n":2}`) {
			t.Fatalf("update with the opt-in on Windows: %v, state %q; want success and the new contents", err, b)
		}
		return
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitIO {
		t.Fatalf("update under Wine: %v, want exit %d (no config root can be owner-only)", err, exitIO)
	}
	for _, want := range []string{`%APPDATA%\exactfs`, "Under Wine, which keeps no DACL"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("the hint lacks %q", want)
		}
	}
	if strings.Contains(stderr.String(), "~/.config/exactfs") {
		t.Errorf("the hint on Windows names the Unix config root")
	}
	if string(b) != `{"n":1}` {
		t.Errorf("the state file changed: %q", b)
	}
}
