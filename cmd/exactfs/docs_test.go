//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/exactfs/exactfs/internal/testfs"
)

// TestManPageCoversEveryCommandAndFlag: 'exactfs man' is valid roff (groff
// finds nothing to warn about) and documents every visible command and
// every flag, as the help does.
func TestManPageCoversEveryCommandAndFlag(t *testing.T) {
	r := runIn(t, t.TempDir(), quick, "", "man")
	expectCode(t, r, 0, "man")
	for _, c := range visibleCommands() {
		if !strings.Contains(r.stdout, ".SS "+roffEscape(c.name)+"\n") {
			t.Errorf("the man page has no section for %s", c.name)
		}
		for _, f := range flagsOf(c) {
			if !strings.Contains(r.stdout, `\-\-`+roffEscape(f.name)) {
				t.Errorf("the man page does not document %s --%s", c.name, f.name)
			}
		}
	}
	if !strings.Contains(r.stdout, ".SH EXIT STATUS") || !strings.Contains(r.stdout, "77") {
		t.Error("the man page has no exit statuses")
	}
	groff := testfs.RequireCommand(t, "groff")
	page := filepath.Join(t.TempDir(), "exactfs.1")
	os.WriteFile(page, []byte(r.stdout), 0o644)
	out, err := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z", page).CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Fatalf("groff finds fault with the man page: %v\n%s", err, out)
	}
}

// TestShellCompletions: each script parses in its shell, and bash's
// completes command names, flags and aliases from the real flag sets.
func TestShellCompletions(t *testing.T) {
	dir := t.TempDir()
	for _, sh := range []string{"bash", "zsh", "fish"} {
		r := runIn(t, dir, quick, "", "completion", sh)
		expectCode(t, r, 0, "completion "+sh)
		script := filepath.Join(dir, "completion."+sh)
		os.WriteFile(script, []byte(r.stdout), 0o644)
		t.Run(sh, func(t *testing.T) {
			bin := testfs.RequireCommand(t, sh)
			if out, err := exec.Command(bin, "-n", script).CombinedOutput(); err != nil {
				t.Errorf("%s -n on the %s completion: %v\n%s", sh, sh, err, out)
			}
		})
	}
	expectCode(t, runIn(t, dir, quick, "", "completion", "tcsh"), exitUsage, "completion tcsh")

	bash := testfs.RequireCommand(t, "bash")
	complete := func(words ...string) string {
		t.Helper()
		prog := `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _exactfs; printf '%s\n' "${COMPREPLY[@]}"`
		out, err := exec.Command(bash, append([]string{"-c", prog, "bash", filepath.Join(dir, "completion.bash")}, words...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("bash completion of %q: %v\n%s", words, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	for _, tc := range []struct {
		words []string
		want  string
	}{
		{[]string{"exactfs", "upd"}, "update"},
		{[]string{"exactfs", "lock", "--ti"}, "--timeout"},
		{[]string{"exactfs", "update", "--allow"}, "--allow-empty"},
		{[]string{"exactfs", "lock", "--allow"}, ""},
		{[]string{"exactfs", "recover", "--dry"}, "--dry-run"},
		{[]string{"exactfs", "help", "reco"}, "recover"},
	} {
		if got := complete(tc.words...); got != tc.want {
			t.Errorf("completing %q: %q, want %q", tc.words, got, tc.want)
		}
	}
	if got := complete("exactfs", "lock", "-"); !strings.Contains(got, "-E") || !strings.Contains(got, "--conflict-exit-code") {
		t.Errorf("completing flags of lock: %q", got)
	}
}
