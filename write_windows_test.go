package exactfs

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/internal/testfs"
)

// TestWindowsReplaceExpectedRefusesBeforeStaging: with no exchange on
// Windows, ReplaceExpected refuses with atomic_unavailable before anything
// is opened or written: no staging file is created (StageCreated), nothing
// is staged or checked (Staged, ReplaceChecked), the caller's BeforeCommit
// is not run, and the directory is as it was, for a path and for a name
// beneath a Dir, whether or not the identity matches. It fails on the code
// that staged and flushed a replacement and only then learned from the
// exchange that there is none (StageCreated fired).
func TestWindowsReplaceExpectedRefusesBeforeStaging(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	mustWrite(t, p, "v1")
	_, id, err := Capture(p)
	if err != nil {
		t.Fatal(err)
	}
	var fired []string
	for _, name := range []string{hook.StageCreated, hook.Staged, hook.ReplaceChecked} {
		defer hook.Set(name, func(string) { fired = append(fired, name) })()
	}
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	before := testfs.Tree(t, dir)
	stale := id
	stale.Size++
	for _, tc := range []struct {
		name string
		call func(opts ...WriteOption) (Identity, error)
	}{
		{"path", func(o ...WriteOption) (Identity, error) { return ReplaceExpected(p, []byte("v2"), id, o...) }},
		{"Dir", func(o ...WriteOption) (Identity, error) {
			return d.ReplaceExpected("state.json", []byte("v2"), id, o...)
		}},
		{"stale identity", func(o ...WriteOption) (Identity, error) { return ReplaceExpected(p, []byte("v2"), stale, o...) }},
	} {
		ran := false
		_, err := tc.call(BeforeCommit(func() error { ran = true; return nil }))
		if CodeOf(err) != CodeAtomicUnavailable {
			t.Errorf("%s: ReplaceExpected: %v, want atomic_unavailable", tc.name, err)
		}
		if e, ok := err.(*Error); !ok || e.Path != p {
			t.Errorf("%s: the error names %q, want %q", tc.name, pathOf(err), p)
		}
		if ran {
			t.Errorf("%s: BeforeCommit ran: a replacement was staged", tc.name)
		}
	}
	if len(fired) > 0 {
		t.Errorf("ReplaceExpected went on to stage a replacement before refusing (hooks fired: %v)", fired)
	}
	if after := testfs.Tree(t, dir); !slices.Equal(after, before) || mustRead(t, p) != "v1" {
		t.Fatalf("ReplaceExpected changed the directory: %q -> %q", before, after)
	}
}

func pathOf(err error) string {
	if e, ok := err.(*Error); ok {
		return e.Path
	}
	return ""
}

// TestWindowsPathsShownWithBackslashes: a sibling of a path named in an
// error or a residue list (a staging name, a detached tree) keeps the
// path's directory and uses Windows's separator, whichever separator the
// caller wrote; the code that cut only at "/" named a bare `.x` for
// `C:\a\state.json`, losing the directory.
func TestWindowsPathsShownWithBackslashes(t *testing.T) {
	for _, tc := range []struct{ path, name, want string }{
		{`C:\a\state.json`, ".state.json.x", `C:\a\.state.json.x`},
		{`C:/a/state.json`, ".state.json.x", `C:\a\.state.json.x`},
		{`C:\state.json`, ".x", `C:\.x`},
		{`\\server\share\d\state.json`, ".x", `\\server\share\d\.x`},
		{`d\state.json`, ".x", `d\.x`},
		{`state.json`, ".x", `.x`},
	} {
		if got := joinDir(tc.path, tc.name); got != tc.want {
			t.Errorf("joinDir(%q, %q) = %q, want %q", tc.path, tc.name, got, tc.want)
		}
	}
	// The residue of a staged write names the staging file beside the
	// destination, as a user on Windows would type it.
	dir := t.TempDir()
	s := &pendingFile{path: filepath.Join(dir, "state.json"), name: ".state.json.x"}
	if got, want := s.residue(), []string{dir + `\.state.json.x`}; !slices.Equal(got, want) {
		t.Errorf("residue %q, want %q", got, want)
	}
	if strings.Contains(joinDir(filepath.Join(dir, "f"), "g"), "/") {
		t.Errorf("a residue path under %s carries a slash", dir)
	}
}
