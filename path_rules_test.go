package exactfs

import (
	"runtime"
	"slices"
	"testing"
)

// TestWindowsPathRulesOnEveryPlatform: splitPath with the Windows rules
// (as a Windows build selects them) gives the volume and components of
// drive and UNC paths, and refuses the forms internal/winpath refuses,
// whatever platform runs the test; the walk's start (volumeRoot, joinAbs)
// is the volume's root, not "/".
func TestWindowsPathRulesOnEveryPlatform(t *testing.T) {
	defer func(was bool) { windowsPaths = was }(windowsPaths)
	windowsPaths = true
	for _, tc := range []struct {
		path  string
		abs   bool
		comps []string
		root  string
		join  string
	}{
		{`C:\Users\me\state.json`, true, []string{"Users", "me", "state.json"}, `C:\`, `C:\Users\me\state.json`},
		{`c:/Users//me/./x`, true, []string{"Users", "me", "x"}, `c:\`, `c:\Users\me\x`},
		{`C:\`, true, nil, `C:\`, `C:\`},
		{`\\server\share\dir\f`, true, []string{"dir", "f"}, `\\server\share\`, `\\server\share\dir\f`},
		{`//server/share`, true, nil, `\\server\share\`, `\\server\share\`},
		{`dir\f`, false, []string{"dir", "f"}, "", ""},
		{`.\f`, false, []string{"f"}, "", ""},
	} {
		abs, comps, err := splitPath("open", tc.path)
		if err != nil || abs != tc.abs || !slices.Equal(comps, tc.comps) {
			t.Errorf("splitPath(%q) = %v %q %v, want %v %q", tc.path, abs, comps, err, tc.abs, tc.comps)
			continue
		}
		if !abs {
			continue
		}
		if got := volumeRoot(tc.path); got != tc.root {
			t.Errorf("volumeRoot(%q) = %q, want %q", tc.path, got, tc.root)
		}
		if got := joinAbs(tc.path, comps); got != tc.join {
			t.Errorf("joinAbs(%q) = %q, want %q", tc.path, got, tc.join)
		}
	}
	for path, code := range map[string]Code{
		`C:rel`:          CodeInvalidRequest,
		`\rooted`:        CodeInvalidRequest,
		`\\?\C:\x`:       CodeInvalidRequest,
		`\\.\pipe\x`:     CodeInvalidRequest,
		`\\server`:       CodeInvalidRequest,
		`C:\a\..\b`:      CodeInvalidRequest,
		`C:\a\b:stream`:  CodeInvalidRequest,
		`C:\a\trail.`:    CodeInvalidRequest,
		`C:\a\aux.txt`:   CodeInvalidRequest,
		"C:\\a\\bad\xff": CodeNotUTF8,
		"":               CodeInvalidRequest,
		"a\x00b":         CodeInvalidRequest,
	} {
		if _, _, err := splitPath("open", path); CodeOf(err) != code {
			t.Errorf("splitPath(%q): %v, want %s", path, err, code)
		}
	}
	// Without the Windows rules (every other platform), nothing changes.
	if runtime.GOOS == "windows" {
		return // filepath.IsAbs("/a") is false there
	}
	windowsPaths = false
	if abs, comps, err := splitPath("open", "/a//b/./c"); err != nil || !abs || !slices.Equal(comps, []string{"a", "b", "c"}) {
		t.Errorf("Unix splitPath: %v %q %v", abs, comps, err)
	}
	if got := joinAbs("/a/b", []string{"a", "b"}); got != "/a/b" {
		t.Errorf("Unix joinAbs = %q", got)
	}
	if got := volumeRoot("/a"); got != "/" {
		t.Errorf("Unix volumeRoot = %q", got)
	}
}
