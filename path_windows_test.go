package exactfs

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/exactfs/exactfs/internal/testfs"
)

// TestWindowsAbsolutePathsWalkFromTheVolumeRoot: an absolute Windows path
// ("C:\..." in either slash, any case of the drive letter) is walked from
// its volume's root handle, one component at a time, by every entry
// point that takes a path; before issue 22 step 2 the walk prefixed "/" to
// the components and opened "C:" as a name in the current directory.
func TestWindowsAbsolutePathsWalkFromTheVolumeRoot(t *testing.T) {
	dir := t.TempDir()
	if !filepath.IsAbs(dir) || filepath.VolumeName(dir) == "" {
		t.Fatalf("TempDir %q is not a drive-absolute path", dir)
	}
	spellings := map[string]string{
		"as given":        dir,
		"forward slash":   filepath.ToSlash(dir),
		"lower drive":     strings.ToLower(dir[:1]) + dir[1:],
		"doubled and dot": strings.Replace(dir, `\`, `\\.\`, 1),
	}
	want, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	for what, p := range spellings {
		d, err := OpenDir(p)
		if err != nil {
			t.Fatalf("OpenDir(%q) (%s): %v", p, what, err)
		}
		id, err := d.Stat()
		d.Close()
		if err != nil || !id.Mode.IsDir() {
			t.Fatalf("%s: Stat %v, %v", what, id, err)
		}
		if got, err := Lstat(p); err != nil || !got.IsDir() || !os.SameFile(want, mustStat(t, p)) {
			t.Fatalf("Lstat(%q) (%s): %v, %v", p, what, got, err)
		}
	}
	// The volume root itself.
	vol := filepath.VolumeName(dir) + `\`
	root, err := OpenDir(vol)
	if err != nil {
		t.Fatalf("OpenDir(%q): %v", vol, err)
	}
	root.Close()

	if err := Mkdir(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(filepath.Join(dir, "a", "b", "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(filepath.ToSlash(filepath.Join(dir, "x", "y")), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Publish(filepath.Join(dir, "a", "b", "c", "f"), []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, id, err := Capture(filepath.Join(dir, "a", "b", "c", "f"))
	if err != nil || string(b) != "one" || id.Nlink != 1 {
		t.Fatalf("Capture: %q %v %v", b, id, err)
	}
	got := testfs.Tree(t, dir)
	for _, w := range []string{`a\`, `a\b\`, `a\b\c\`, `a\b\c\f `, `x\`, `x\y\`} {
		if !slices.ContainsFunc(got, func(g string) bool { return g == w || strings.HasSuffix(w, " ") && strings.HasPrefix(g, w) }) {
			t.Errorf("%s missing: %q", w, got)
		}
	}
}

func mustStat(t *testing.T, p string) fs.FileInfo {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// TestWindowsRelativePathsStayInTheWorkingDirectory: a relative path is
// walked from the working directory, never from a volume's root.
func TestWindowsRelativePathsStayInTheWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := Mkdir("sub", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(`sub\p\q`, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Publish("sub/p/f", []byte("rel"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(".")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Lstat(`sub\p\q`); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "sub", "p", "f")); err != nil || string(b) != "rel" {
		t.Fatalf("published %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(filepath.VolumeName(dir)+`\`, "sub")); err == nil {
		t.Fatalf("a relative path was made at the volume's root")
	}
}

// TestWindowsPathRulesRefuseBeforeAnyCall: every path form and name that
// a Win32 program would resolve to another object than exactfs's
// handle-relative open (internal/winpath) is refused with invalid_request
// (not_utf8 for bytes that are no UTF-8), by every entry point, naming
// what is wrong, before anything is created.
func TestWindowsPathRulesRefuseBeforeAnyCall(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	before := testfs.Tree(t, dir)
	drive := filepath.VolumeName(dir)
	cases := map[string]string{
		drive + "rel":                  "current directory of drive",
		`\rooted\x`:                    "root of the current drive",
		`\\?\` + dir + `\x`:            "device namespace",
		`\\.\pipe\x`:                   "device namespace",
		`\\server`:                     "server and a share",
		filepath.Join(dir, "x:stream"): `"x:stream"`,
		filepath.Join(dir, "trail."):   `"trail."`,
		filepath.Join(dir, "trail "):   `"trail "`,
		filepath.Join(dir, "NUL.txt"):  `"NUL.txt"`,
		filepath.Join(dir, "CON", "x"): `"CON"`,
		dir + `\sub\..\x`:              "climbing",
		filepath.Join(dir, "a|b"):      `"a|b"`,
		filepath.Join(dir, "bad\xff"):  "UTF-8",
		`sub\x:stream`:                 `"x:stream"`,
	}
	ops := map[string]func(p string) error{
		"OpenDir":  func(p string) error { d, err := OpenDir(p); closeIf(d); return err },
		"Lstat":    func(p string) error { _, err := Lstat(p); return err },
		"Mkdir":    func(p string) error { return Mkdir(p, 0o755) },
		"MkdirAll": func(p string) error { return MkdirAll(p, 0o755) },
		"Publish":  func(p string) error { _, err := Publish(p, []byte("x"), 0o644); return err },
		"WriteFile": func(p string) error {
			_, err := WriteFile(p, []byte("x"), 0o644)
			return err
		},
		"OpenFile": func(p string) error {
			f, err := OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
			if err == nil {
				f.Close()
			}
			return err
		},
	}
	for p, says := range cases {
		for name, op := range ops {
			err := op(p)
			want := CodeInvalidRequest
			if says == "UTF-8" {
				want = CodeNotUTF8
			}
			if CodeOf(err) != want {
				t.Errorf("%s(%q): %v (code %q), want %s", name, p, err, CodeOf(err), want)
				continue
			}
			if !strings.Contains(err.Error(), says) {
				t.Errorf("%s(%q): %q does not say %q", name, p, err, says)
			}
		}
	}
	if after := testfs.Tree(t, dir); !slices.Equal(after, before) {
		t.Fatalf("refused paths changed the directory:\nbefore %q\nafter  %q", before, after)
	}
}

func closeIf(d *Dir) {
	if d != nil {
		d.Close()
	}
}
