package winpath

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseAccepts(t *testing.T) {
	for _, tc := range []struct {
		path  string
		vol   string
		comps []string
		unc   bool
	}{
		{`state.json`, "", []string{"state.json"}, false},
		{`dir\sub/state.json`, "", []string{"dir", "sub", "state.json"}, false},
		{`.\dir\.\x`, "", []string{"dir", "x"}, false},
		{`C:\`, "C:", nil, false},
		{`c:\Users\me\AppData\Roaming\exactfs`, "c:", []string{"Users", "me", "AppData", "Roaming", "exactfs"}, false},
		{`C:/tmp//x/`, "C:", []string{"tmp", "x"}, false},
		{`\\server\share`, `\\server\share`, nil, true},
		{`\\server\share\dir\f.lock`, `\\server\share`, []string{"dir", "f.lock"}, true},
		{`//server/share/f`, `\\server\share`, []string{"f"}, true},
		{`.gjc-delete-state-lock-spare-state.json.lock.transition`, "", []string{".gjc-delete-state-lock-spare-state.json.lock.transition"}, false},
		{`state.json.lock.transition.owner`, "", []string{"state.json.lock.transition.owner"}, false},
		{`NULL`, "", []string{"NULL"}, false},         // not a device name
		{`COM10`, "", []string{"COM10"}, false},       // only COM0-COM9 are
		{`LPT`, "", []string{"LPT"}, false},           // no digit
		{`x.NUL`, "", []string{"x.NUL"}, false},       // the device name must come first
		{` lead`, "", []string{" lead"}, false},       // leading spaces are kept by Win32
		{`PROGRA~1`, "", []string{"PROGRA~1"}, false}, // an 8.3 form: resolved alike by NT and Win32
		{`日本語.json`, "", []string{"日本語.json"}, false}, // UTF-8 is fine
	} {
		p, err := Parse(tc.path)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.path, err)
			continue
		}
		if p.Volume != tc.vol || !slices.Equal(p.Comps, tc.comps) || p.IsUNC() != tc.unc || p.IsAbs() != (tc.vol != "") {
			t.Errorf("Parse(%q) = %+v (unc %v), want volume %q comps %q", tc.path, p, p.IsUNC(), tc.vol, tc.comps)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		path string
		name string // the component the error names, "" for the path's form
		why  string // a word the reason must contain
	}{
		{"", "", "empty"},
		{"a\x00b", "", "NUL byte"},
		{`\\?\C:\x`, "", "device namespace"},
		{`\\.\PhysicalDrive0`, "", "device namespace"},
		{`\??\C:\x`, "", "device namespace"},
		{`//?/C:/x`, "", "device namespace"},
		{`C:`, "", "current directory of drive C:"},
		{`C:x\y`, "", "current directory of drive C:"},
		{`\Windows`, "", "root of the current drive"},
		{`/tmp/x`, "", "root of the current drive"},
		{`\\server`, "", "server and a share"},
		{`\\server\`, "", "server and a share"},
		{`\\\share`, "", "server and a share"},
		{`\\server\sh:are\x`, "sh:are", "alternate data stream"},
		{`a\..\b`, "..", "climbing"},
		{`C:\x\..`, "..", "climbing"},
		{`dir\state.json:evil`, "state.json:evil", "alternate data stream"},
		{`state.json.lock:$DATA`, "state.json.lock:$DATA", "alternate data stream"},
		{`dir.\x`, "dir.", "trailing dot"},
		{`x\state.json.`, "state.json.", "trailing dot"},
		{`x\state.json `, "state.json ", "trailing space"},
		{`x\...`, "...", "only dots and spaces"},
		{`x\ `, " ", "only dots and spaces"},
		{`NUL`, "NUL", "device name NUL"},
		{`dir\nul.txt`, "nul.txt", "device name NUL with an extension"},
		{`dir\Con.tar.gz`, "Con.tar.gz", "device name CON"},
		{`AUX .json`, "AUX .json", "device name AUX"},
		{`prn`, "prn", "device name PRN"},
		{`com1`, "com1", "device name COM1"},
		{`COM0.lock`, "COM0.lock", "device name COM0"},
		{`lpt9`, "lpt9", "device name LPT9"},
		{`LPT¹`, "LPT¹", "device name LPT¹"},
		{`conin$`, "conin$", "device name CONIN$"},
		{`CONOUT$.x`, "CONOUT$.x", "device name CONOUT$"},
		{`a<b`, "a<b", "does not allow"},
		{`a>b`, "a>b", "does not allow"},
		{`a"b`, `a"b`, "does not allow"},
		{`a|b`, "a|b", "does not allow"},
		{`a?b`, "a?b", "does not allow"},
		{`a*b`, "a*b", "does not allow"},
		{"a\tb", "a\tb", "control character"},
		{"a\x1fb", "a\x1fb", "control character"},
		{strings.Repeat("x", 256), strings.Repeat("x", 256), "256 UTF-16 code units"},
		{strings.Repeat("日", 256), strings.Repeat("日", 256), "256 UTF-16 code units"},
	} {
		p, err := Parse(tc.path)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Parse(%q) = %+v, %v; want an *Error", tc.path, p, err)
			continue
		}
		if e.Path != tc.path || e.Name != tc.name || !strings.Contains(e.Reason, tc.why) {
			t.Errorf("Parse(%q): %#v; want component %q and a reason with %q", tc.path, e, tc.name, tc.why)
		}
		if !strings.Contains(err.Error(), tc.why) {
			t.Errorf("Parse(%q): message %q does not say %q", tc.path, err, tc.why)
		}
		if errors.Is(err, ErrNotUTF8) {
			t.Errorf("Parse(%q): %v matches ErrNotUTF8", tc.path, err)
		}
	}
}

// TestNamesAtTheLimit: 255 UTF-16 code units is the longest name; a
// character outside the BMP counts twice.
func TestNamesAtTheLimit(t *testing.T) {
	if err := CheckName(strings.Repeat("x", MaxNameUnits)); err != nil {
		t.Fatal(err)
	}
	if err := CheckName(strings.Repeat("😀", MaxNameUnits/2)); err != nil {
		t.Fatal(err)
	}
	if err := CheckName(strings.Repeat("😀", MaxNameUnits/2+1)); err == nil || !strings.Contains(err.Error(), "256 UTF-16") {
		t.Fatalf("CheckName of 128 astral characters: %v, want 256 UTF-16 code units refused", err)
	}
}

func TestNotUTF8(t *testing.T) {
	for _, path := range []string{"a\xffb", `dir\` + "\xc3"} {
		_, err := Parse(path)
		if !errors.Is(err, ErrNotUTF8) || !strings.Contains(err.Error(), "UTF-8") {
			t.Errorf("Parse(%q) = %v, want ErrNotUTF8", path, err)
		}
	}
	if err := CheckName("\xfe"); !errors.Is(err, ErrNotUTF8) {
		t.Errorf("CheckName: %v, want ErrNotUTF8", err)
	}
}

func TestCheckNameRefusesWhatParseSplits(t *testing.T) {
	for _, n := range []string{"", ".", "..", `a\b`, "a/b"} {
		if err := CheckName(n); err == nil {
			t.Errorf("CheckName(%q) accepted it", n)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{`C:\x\y`, `\\s\h\x`, `a\b.`, "NUL.txt", `x:y`, `..`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		p, err := Parse(path)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("Parse(%q): %T %v, want *Error", path, err, err)
			}
			return
		}
		for _, c := range p.Comps {
			if err := CheckName(c); err != nil {
				t.Fatalf("Parse(%q) accepted component %q: %v", path, c, err)
			}
		}
	})
}
