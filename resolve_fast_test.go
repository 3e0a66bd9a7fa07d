//go:build unix

package exactfs

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// Issue 25: splitPath, resolve, joinAbs and Dir.join take shortcuts for
// the common case (a plain name beneath a Dir, a clean absolute path).
// Each must give exactly what the general path gives, and every refusal of
// the general path must stay a refusal.

// splitPathBySplit is splitPath's former loop, over strings.Split.
func splitPathBySplit(path string) (abs bool, comps []string, refused bool) {
	abs = filepath.IsAbs(path)
	for _, c := range strings.Split(filepath.ToSlash(path), "/") {
		switch c {
		case "", ".":
			continue
		case "..":
			return abs, nil, true
		}
		comps = append(comps, c)
	}
	return abs, comps, false
}

var pathShapes = []string{
	"a", "a/b", "/a", "/a/b/", "//a//b//", "./a", "a/./b", "a/..", "../a", "..", ".", "/", "a/b/c/", "x..", "..x", ".a", "a/.b/", "/a/b/..", "a//", "///",
}

func TestSplitPathAsBefore(t *testing.T) {
	for _, p := range pathShapes {
		abs, comps, err := splitPath("t", p)
		wabs, wcomps, refused := splitPathBySplit(p)
		if (err != nil) != refused || abs != wabs || !slices.Equal(comps, wcomps) || (comps == nil) != (wcomps == nil) {
			t.Errorf("splitPath(%q) = %v, %q, %v; want %v, %q, refused %v", p, abs, comps, err, wabs, wcomps, refused)
		}
	}
}

func TestJoinAbsAsBefore(t *testing.T) {
	for _, p := range pathShapes {
		abs, comps, err := splitPath("t", p)
		if err != nil || !abs {
			continue
		}
		if got, want := joinAbs(p, comps), "/"+strings.Join(comps, "/"); got != want {
			t.Errorf("joinAbs(%q) = %q, want %q", p, got, want)
		}
	}
}

func TestDirJoinAsFilepathJoin(t *testing.T) {
	for _, dp := range []string{"", ".", "/", "//", "/a", "/a/", "/a//", "a", "a/", "./a", "a/../b", "/a/./b", "../a"} {
		for _, name := range []string{"x", ".x", "x.y", ".", "..", "a/b", "", "x/"} {
			d := &Dir{path: dp}
			if got, want := d.join(name), filepath.Join(dp, name); got != want {
				t.Errorf("Dir{%q}.join(%q) = %q, want %q", dp, name, got, want)
			}
		}
	}
}

// TestResolvePlainNameAsWalk: a name beneath a Dir resolves to the Dir's
// own descriptor and the name, as the general path does, and everything
// else takes the general path: a symlinked component is refused, "." and
// ".." and absolute names too.
func TestResolvePlainNameAsWalk(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, tc := range []struct {
		name string
		code Code // "" for success
	}{
		{"sub", ""}, {"link", ""}, {"sub/f", ""}, {"f", CodeNotFound},
		{"link/f", CodeReparsePoint}, {".", CodeInvalidRequest}, {"..", CodeInvalidRequest},
		{"", CodeInvalidRequest}, {"a\x00b", CodeInvalidRequest}, {"/etc", CodeInvalidRequest}, {"sub/../sub", CodeInvalidRequest},
	} {
		_, err := d.Lstat(tc.name)
		if CodeOf(err) != tc.code {
			t.Errorf("Lstat(%q) = %v, want code %q", tc.name, err, tc.code)
		}
	}
	// The shortcut borrows the Dir's descriptor like the general path.
	h, base, err := resolve("t", d, "sub")
	if err != nil || base != "sub" || h.fd != d.fd || h.owned || h.ref != d {
		t.Fatalf("resolve(sub) = %+v, %q, %v", h, base, err)
	}
	h.close()
	d.Close()
	if _, err := d.Lstat("sub"); CodeOf(err) != CodeInvalidRequest {
		t.Fatalf("Lstat on a closed Dir: %v", err)
	}
}

// stackNames: internal/sys copies names to the stack here (cstr_linux.go).
const stackNames = runtime.GOOS == "linux" && (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64")

// TestPlainNameMethodsDoNotAllocate pins the shortcut itself (it fails on
// the code before issue 25's change, where every name went through
// splitPath and openPath, and each system call copied its name to the
// heap): a raw lstat of a name beneath a Dir allocates nothing.
func TestPlainNameMethodsDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	if !stackNames {
		t.Skip("names are copied to the heap by x/sys on this platform")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if n := testing.AllocsPerRun(100, func() {
		p, _, err := resolve("t", d, "f")
		if err != nil {
			t.Fatal(err)
		}
		p.close()
	}); n != 0 {
		t.Errorf("resolve of a plain name: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := d.LstatRaw("f"); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("LstatRaw: %v allocations, want 0", n)
	}
}
