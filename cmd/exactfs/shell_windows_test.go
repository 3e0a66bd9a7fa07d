package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// -c on Windows (shell_windows.go), with the real cmd.exe of the system
// (Wine's under the Wine lane): the string reaches it verbatim, runs once,
// its status is exactfs's, and its tree stays in the Job object.

const (
	shellEnv   = "EXACTFS_TEST_SHELL"   // the -c string of the "shellholder" role
	plantedEnv = "EXACTFS_TEST_PLANTED" // where a planted cmd.exe (this binary) says it ran
)

// runShell runs s as lock -c does (splitCommand, then the Job object's
// start) in the current directory, and returns its status and output.
func runShell(t *testing.T, s string, vars ...string) (status int, out string) {
	t.Helper()
	f := &lockFlags{shell: s}
	_, argv, err := f.splitCommand([]string{"state.json"})
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	c := &child{argv: argv, shell: true, stdin: bytes.NewReader(nil), stdout: &stdout, stderr: &stderr, env: vars}
	run, err := c.start(&env{stderr: &stderr})
	if err != nil {
		t.Fatalf("start %q: %v (%s)", argv, err, stderr.String())
	}
	status = run.wait()
	t.Logf("%q: exit %d, stdout %q, stderr %q", argv, status, stdout.String(), stderr.String())
	return status, stdout.String()
}

func fileLines(t *testing.T, p string) []string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n"), "\n")
}

// TestWindowsShellCommandVerbatim: a -c string with spaces, quotes, & and
// %VAR% runs once through cmd.exe with cmd.exe's meaning, and its exit
// status is the command's. Before, Go quoted the string by the MSVC rules
// (\" for each quote): cmd.exe saw `echo \"a & b\"`, ran `b\"` as a
// second command, and the first line read `\"a `.
func TestWindowsShellCommandVerbatim(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out dir")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out file.txt")
	s := `echo "a & b"& echo %EXACTFS_TEST_WORD%& echo 50%& echo once>>"` + out + `"& exit 7`
	status, stdout := runShell(t, s, "EXACTFS_TEST_WORD=two words")
	if status != 7 {
		t.Errorf("exit status %d, want 7 (the command's)", status)
	}
	lines := strings.Split(strings.TrimRight(strings.ReplaceAll(stdout, "\r\n", "\n"), "\n"), "\n")
	if want := []string{`"a & b"`, "two words", "50%"}; !slices.Equal(lines, want) {
		t.Errorf("the command printed %q, want %q", lines, want)
	}
	if got := fileLines(t, out); !slices.Equal(got, []string{"once"}) {
		t.Errorf("the command wrote %q to %s, want it once", got, out)
	}
	if status, _ := runShell(t, `exit 0`); status != 0 {
		t.Errorf("exit 0 gave %d", status)
	}
}

// TestWindowsShellRefusesLineBreaks: cmd.exe would run only a string's
// first line; -c refuses it, with exit 64, instead of dropping the rest.
func TestWindowsShellRefusesLineBreaks(t *testing.T) {
	f := &lockFlags{shell: "echo one\r\necho two"}
	_, _, err := f.splitCommand([]string{"state.json"})
	if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), ".cmd file") {
		t.Fatalf("got %v (exit %d), want a usage error that says to use a .cmd file", err, exitCode(err))
	}
}

// TestWindowsShellIgnoresPlantedCmd: the interpreter is %ComSpec% when it
// is an absolute path, else the system directory's cmd.exe: never a
// cmd.exe in the current directory or on PATH. The planted one is this
// test binary, which records that it ran (TestMain).
func TestWindowsShellIgnoresPlantedCmd(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	planted := filepath.Join(dir, "cmd.exe")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(planted, b, 0o755); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(t.TempDir(), "planted-ran")
	t.Setenv(plantedEnv, mark)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Chdir(dir)
	for _, comspec := range []string{"", "cmd.exe", `.\cmd.exe`} {
		t.Setenv("ComSpec", comspec)
		if comspec == "" {
			os.Unsetenv("ComSpec")
		}
		ran := filepath.Join(t.TempDir(), "ran")
		if status, _ := runShell(t, `echo real>"`+ran+`"`); status != 0 {
			t.Errorf("ComSpec %q: exit %d", comspec, status)
		}
		if _, err := os.Stat(mark); err == nil {
			t.Fatalf("ComSpec %q: the planted %s ran", comspec, planted)
		}
		if got := fileLines(t, ran); !slices.Equal(got, []string{"real"}) {
			t.Errorf("ComSpec %q: the command wrote %q", comspec, got)
		}
	}
	// An absolute %ComSpec% is what the user chose: it is run.
	t.Setenv("ComSpec", planted)
	if status, _ := runShell(t, `echo real`); status != 99 {
		t.Errorf("ComSpec %s: exit %d, want the planted binary's 99", planted, status)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Errorf("an absolute ComSpec was not run: %v", err)
	}
}

// plantedCmd is TestMain's: this binary, copied to cmd.exe, was run.
func plantedCmd() bool {
	self, err := os.Executable()
	if err != nil || !strings.EqualFold(filepath.Base(self), "cmd.exe") {
		return false
	}
	os.WriteFile(os.Getenv(plantedEnv), []byte(strings.Join(os.Args, " ")), 0o644)
	return true
}

// shellHolder is the "shellholder" role: exactfs running $EXACTFS_TEST_SHELL
// with -c in its Job object, until the test kills it.
func shellHolder() int {
	f := &lockFlags{shell: os.Getenv(shellEnv)}
	_, argv, err := f.splitCommand([]string{"state.json"})
	if err != nil {
		return 3
	}
	c := &child{argv: argv, shell: true, stdin: bytes.NewReader(nil), stdout: io.Discard, stderr: os.Stderr}
	run, err := c.start(&env{stderr: os.Stderr})
	if err != nil {
		return 3
	}
	return run.wait()
}

// TestWindowsShellTreeEndsWithExactfs: a -c command runs in the Job
// object like any CMD: when exactfs is killed, cmd.exe, the program the
// string started, and the process that one started all die.
func TestWindowsShellTreeEndsWithExactfs(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "pids")
	holder := exec.Command(self)
	holder.Env = append(os.Environ(), jobRoleEnv+"=shellholder", jobOutEnv+"="+out,
		shellEnv+`=set `+jobRoleEnv+`=tree&& "`+self+`"`)
	holder.Stderr = os.Stderr
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	hs := treePids(t, out)
	if err := holder.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	holder.Wait()
	wantGone(t, hs, []string{"the program the -c string started", "its child"})
}
