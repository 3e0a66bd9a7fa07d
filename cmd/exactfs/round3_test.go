//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWriteRefusesEmptyStdin: 'exactfs write' (plain and --expect) with
// empty stdin exits 65 and leaves the file byte- and inode-identical, as
// update does with an empty stdout; --allow-empty writes the empty file.
// Fails on f315da3, where both wiped the file and exited 0.
func TestWriteRefusesEmptyStdin(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.json")
	if err := os.WriteFile(p, []byte(`{"important":true}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(p)
	id := strings.TrimSpace(runIn(t, dir, quick, "", "stat", "--id", "config.json").stdout)
	for _, args := range [][]string{
		{"write", "config.json"},
		{"write", "--expect", id, "config.json"},
	} {
		r := runIn(t, dir, quick, "", args...)
		expectCode(t, r, exitDataErr, strings.Join(args, " ")+" </dev/null")
		if !strings.Contains(r.stderr, "stdin was empty") || !strings.Contains(r.stderr, "--allow-empty") {
			t.Errorf("%s: the refusal does not say why or how to override: %s", strings.Join(args, " "), r.stderr)
		}
		after, _ := os.Stat(p)
		if got := mustRead(t, p); got != `{"important":true}`+"\n" || !os.SameFile(before, after) {
			t.Fatalf("%s with empty stdin changed the file: %q", strings.Join(args, " "), got)
		}
	}
	expectCode(t, runIn(t, dir, quick, "", "write", "--allow-empty", "config.json"), 0, "write --allow-empty")
	if got := mustRead(t, p); got != "" {
		t.Fatalf("write --allow-empty left %q", got)
	}
}

// TestTimeoutInfinity: --timeout inf and infinity wait as none does (past
// the holder's 2 s, far beyond one attempt); nan and values that overflow
// a wait are usage errors. Fails on f315da3, where all four meant one
// attempt (exit 75 at once).
func TestTimeoutInfinity(t *testing.T) {
	dir := t.TempDir()
	for _, v := range []string{"nan", "NaN", "1e300", "9.3e9", "1e10h"} {
		r := runIn(t, dir, quick, "", "lock", "--timeout", v, "s", "--", "true")
		expectCode(t, r, exitUsage, "lock --timeout "+v)
		if !strings.Contains(r.stderr, "--timeout") {
			t.Errorf("--timeout %s: the message does not name the flag as help spells it: %s", v, r.stderr)
		}
	}
	for _, v := range []string{"inf", "infinity"} {
		h := startHolder(t, dir, "s", 2)
		r := runIn(t, dir, 30*time.Second, "", "lock", "--timeout", v, "s", "--", "touch", "ran-"+v)
		expectCode(t, r, 0, "lock --timeout "+v+" behind a 2 s holder")
		if err := <-h.done; err != nil {
			t.Fatalf("holder: %v", err)
		}
		h.done <- nil
		if _, err := os.Stat(filepath.Join(dir, "ran-"+v)); err != nil {
			t.Fatalf("--timeout %s: the command did not run", v)
		}
	}
}

// TestFlagsAfterStateFile: a flag after STATEFILE is refused with exit 64
// and the corrected command line, before the lock is taken (a busy lock
// does not make it wait) and without running anything. Fails on f315da3,
// where --timeout was run as the command (127), after the wait.
func TestFlagsAfterStateFile(t *testing.T) {
	dir := t.TempDir()
	startHolder(t, dir, "s", 30)
	for _, tc := range []struct {
		args []string
		fix  string
	}{
		{[]string{"update", "s", "--timeout", "1", "--", "touch", "ran"}, "exactfs update --timeout 1 s -- touch ran"},
		{[]string{"lock", "s", "-w", "1", "--", "touch", "ran"}, "exactfs lock -w 1 s -- touch ran"},
		{[]string{"lock", "s", "-c", "touch ran"}, "exactfs lock -c 'touch ran' s --"},
		{[]string{"lock", "s", "--try", "touch", "ran"}, "exactfs lock --try s -- touch ran"},
		{[]string{"update", "s", "--bogus", "--", "touch", "ran"}, "not a flag of update"},
		{[]string{"status", "s", "--json"}, "exactfs status --json s"},
	} {
		r := runIn(t, dir, quick, "", tc.args...)
		what := strings.Join(tc.args, " ")
		expectCode(t, r, exitUsage, what)
		if !strings.Contains(r.stderr, "flags go before STATEFILE") || !strings.Contains(r.stderr, tc.fix) {
			t.Errorf("%s: %s", what, r.stderr)
		}
		checkPrompt(t, r, 2*time.Second, what)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Fatal("a misplaced flag ran a command")
	}
	// A dash after -- belongs to CMD, and CMD's own -- is left alone.
	r := runIn(t, dir, quick, "", "lock", "free", "--", "echo", "-w")
	expectCode(t, r, 0, "lock free -- echo -w")
	if r.stdout != "-w\n" {
		t.Errorf("lock free -- echo -w printed %q", r.stdout)
	}
	r = runIn(t, dir, quick, "", "lock", "free", "sh", "-c", "echo $0", "--")
	expectCode(t, r, 0, "lock free sh -c ... --")
}

// TestLockPathIsAbsolute: EXACTFS_LOCK_PATH names the owner record by an
// absolute path, so it still names it after CMD changes directory. Fails
// on f315da3 (s.lock, relative).
func TestLockPathIsAbsolute(t *testing.T) {
	dir := t.TempDir()
	r := runIn(t, dir, quick, "", "lock", "s", "--", "sh", "-c", `cd / && ls "$EXACTFS_LOCK_PATH"`)
	expectCode(t, r, 0, "lock s -- sh -c 'cd / && ls $EXACTFS_LOCK_PATH'")
	if got, want := strings.TrimSpace(r.stdout), filepath.Join(dir, "s.lock"); got != want {
		t.Fatalf("EXACTFS_LOCK_PATH after cd /: %q, want %q", got, want)
	}
}

// TestDidYouMean: a mistyped command is answered with the commands it is
// close to. Fails on f315da3 (no suggestion).
func TestDidYouMean(t *testing.T) {
	dir := t.TempDir()
	for typo, want := range map[string]string{"stauts": "status", "lcok": "lock", "upadte": "update", "recovr": "recover", "rn": "rm"} {
		for _, args := range [][]string{{typo}, {"help", typo}} {
			r := runIn(t, dir, quick, "", args...)
			expectCode(t, r, exitUsage, strings.Join(args, " "))
			if !strings.Contains(r.stderr, "did you mean") || !strings.Contains(r.stderr, want) {
				t.Errorf("%s: %s", strings.Join(args, " "), r.stderr)
			}
		}
	}
	if r := runIn(t, dir, quick, "", "frobnicate"); strings.Contains(r.stderr, "did you mean") {
		t.Errorf("a word close to no command got a suggestion: %s", r.stderr)
	}
}

// TestHardLinkOneAnswer: update, plain write, write --expect and rm
// --expect all refuse a hard-linked file with 77, change neither name, and
// say how to list the names and go on (write: not rm). Fails on f315da3,
// where update and plain write split the link and exited 0.
func TestHardLinkOneAnswer(t *testing.T) {
	dir := t.TempDir()
	p, other := filepath.Join(dir, "hl.json"), filepath.Join(dir, "other.json")
	if err := os.WriteFile(p, []byte(`{"n":1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(p, other); err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(runIn(t, dir, quick, "", "stat", "--id", "hl.json").stdout)
	for _, tc := range []struct {
		args []string
		in   string
		hint string
	}{
		{[]string{"update", "hl.json", "--", "sh", "-c", "touch ran; echo new"}, "", "cp -p hl.json"},
		{[]string{"write", "hl.json"}, "new\n", "cp -p hl.json"},
		{[]string{"write", "--expect", id, "hl.json"}, "new\n", "cp -p hl.json"},
		{[]string{"rm", "--expect", id, "hl.json"}, "", "plain rm"},
	} {
		what := strings.Join(tc.args, " ")
		r := runIn(t, dir, quick, tc.in, tc.args...)
		expectCode(t, r, exitUnsafe, what)
		if !strings.Contains(r.stderr, "-samefile hl.json") || !strings.Contains(r.stderr, tc.hint) {
			t.Errorf("%s: the hint does not say how to go on: %s", what, r.stderr)
		}
		if tc.args[0] == "write" && strings.Contains(r.stderr, "plain rm") {
			t.Errorf("%s suggests rm to someone who asked to write: %s", what, r.stderr)
		}
		a, _ := os.Stat(p)
		b, _ := os.Stat(other)
		if !os.SameFile(a, b) || mustRead(t, p) != `{"n":1}`+"\n" {
			t.Fatalf("%s changed the linked file or split the link", what)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("update ran CMD on a hard-linked state file")
	}
}

// TestModesIgnoreUmask: the CLI's modes are exact whatever the umask: a
// replace keeps the old file's mode, --mode is the mode, a new file is
// 0600. The library applies the umask by default now (ExactPerm is how the
// CLI and statelock keep modes); under umask 077 a kept 0644 must not
// become 0600, nor under 022 a --mode 0666 become 0644.
func TestModesIgnoreUmask(t *testing.T) {
	dir := t.TempDir()
	sh := func(umask string, stdin string, args ...string) result {
		t.Helper()
		script := "umask " + umask + "; exec " + shellJoin(append([]string{exactfsBin}, args...))
		cmd := []string{"sh", "-c", script}
		return runWithArgv(t, dir, stdin, cmd)
	}
	for name, perm := range map[string]os.FileMode{"kept-u": 0o644, "kept-w": 0o664} {
		os.WriteFile(filepath.Join(dir, name), []byte("1\n"), 0o600)
		os.Chmod(filepath.Join(dir, name), perm)
	}
	expectCode(t, sh("077", "", "update", "kept-u", "--", "sh", "-c", "cat; echo 2"), 0, "umask 077; update")
	expectCode(t, sh("077", "new\n", "write", "kept-w"), 0, "umask 077; write")
	expectCode(t, sh("022", "new\n", "write", "--mode", "0666", "given"), 0, "umask 022; write --mode 0666")
	expectCode(t, sh("000", "new\n", "write", "fresh"), 0, "umask 000; write")
	for name, want := range map[string]os.FileMode{"kept-u": 0o644, "kept-w": 0o664, "given": 0o666, "fresh": 0o600} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s is %04o, want %04o", name, fi.Mode().Perm(), want)
		}
	}
}

// runWithArgv runs argv (not the binary itself) in dir, bounded by quick.
func runWithArgv(t testing.TB, dir, stdin string, argv []string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), quick)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%q: still running after %v", argv, quick)
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%q: %v", argv, err)
	}
	return r
}

// TestMissingConfigRootRefused: a --config-root that does not exist is
// refused by every command that takes one (74, nothing created, a hint
// about the typo), while the default root is still created on first use.
// Fails on f315da3, which created the mistyped root and a new secret.
func TestMissingConfigRootRefused(t *testing.T) {
	dir := t.TempDir()
	typo := filepath.Join(dir, "typo", "cfg")
	for _, args := range [][]string{
		{"lock", "--config-root", typo, "s", "--", "touch", "ran"},
		{"update", "--config-root", typo, "s", "--", "echo", "x"},
		{"status", "--config-root", typo, "s"},
		{"recover", "--config-root", typo, "s"},
		{"doctor", "--config-root", typo, "."},
	} {
		what := strings.Join(args, " ")
		r := runIn(t, dir, quick, "", args...)
		expectCode(t, r, exitIO, what)
		if !strings.Contains(r.stderr, "does not exist; nothing was created") || !strings.Contains(r.stderr, "typo") {
			t.Errorf("%s: %s", what, r.stderr)
		}
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Fatalf("a refused --config-root left %v", names)
	}
	// The default root is created when missing; naming it is the same.
	home := t.TempDir()
	def := filepath.Join(home, "exactfs")
	r := runWith(t, dir, quick, "", []string{"XDG_CONFIG_HOME=" + home}, "lock", "--config-root", def, "s", "--", "true")
	expectCode(t, r, 0, "lock --config-root DEFAULT (missing)")
	if _, err := os.Stat(filepath.Join(def, "machine-identity.secret")); err != nil {
		t.Fatalf("the default config root was not created: %v", err)
	}
}

// TestNoHomeHint: with no HOME (env -i) status says "cannot inspect" (it
// takes no lock) and every command names --config-root; with a HOME it may
// not write (uid 65534, HOME=/nonexistent) the same. Fails on f315da3
// ("cannot take", no hint).
func TestNoHomeHint(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"status", "s"}, {"lock", "s", "--", "true"}} {
		r := runEnvOnly(t, dir, []string{"PATH=" + os.Getenv("PATH")}, args...)
		expectCode(t, r, exitIO, "env -i exactfs "+strings.Join(args, " "))
		if !strings.Contains(r.stderr, "--config-root DIR") {
			t.Errorf("env -i %s: no --config-root hint: %s", strings.Join(args, " "), r.stderr)
		}
		if args[0] == "status" && (strings.Contains(r.stderr, "cannot take") || !strings.Contains(r.stderr, "cannot inspect")) {
			t.Errorf("status says it takes the lock: %s", r.stderr)
		}
	}
}

// runEnvOnly runs the binary with exactly env as its environment.
func runEnvOnly(t testing.TB, dir string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), quick)
	defer cancel()
	cmd := exec.CommandContext(ctx, exactfsBin, args...)
	cmd.Dir, cmd.Env = dir, env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("exactfs %q: still running after %v", args, quick)
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return r
}
