package sys

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// win32Divergent are names an NT open takes as given but a Win32 program
// (the TypeScript peers, Explorer) resolves to another object: a device,
// the name without its trailing dots or spaces, a stream of another file.
var win32Divergent = []string{
	"NUL", "nul.txt", "CON.json", "AUX .lock", "com1", "LPT9.x", "CONIN$", "COM¹",
	"trail.", "trail ", "trail. .", "...",
	"f:stream", "state.json.lock:$DATA",
	"a*b", "a?b", "a<b", "a>b", "a|b", `a"b`, "a\tb",
}

// TestWin32NamesRefusedBeforeAnyCall: every call that takes a name refuses
// a Win32-divergent one with EINVAL and creates nothing, relative to a
// handle and in an absolute path, in the final component and in a
// directory component; names Win32 leaves alone still work.
func TestWin32NamesRefusedBeforeAnyCall(t *testing.T) {
	dir := t.TempDir()
	create(t, dirHandle(t, dir), "f", "x")
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	fd := dirHandle(t, dir)
	before := names(t, dir)
	for _, name := range win32Divergent {
		abs := filepath.Join(dir, name)
		calls := map[string]func() error{
			"Open create": func() error {
				f, err := Open(fd, name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
				if err == nil {
					Close(f)
				}
				return err
			},
			"Open create, absolute": func() error {
				f, err := Open(AtCWD, abs, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
				if err == nil {
					Close(f)
				}
				return err
			},
			"Open create, beneath it": func() error {
				f, err := Open(fd, name+`\x`, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
				if err == nil {
					Close(f)
				}
				return err
			},
			"Mkdir":  func() error { return Mkdir(fd, name, 0o700) },
			"Lstat":  func() error { _, err := Lstat(fd, name); return err },
			"Unlink": func() error { return Unlink(fd, name) },
			"Rmdir":  func() error { return Rmdir(fd, name) },
			"OpenDir": func() error {
				d, err := OpenDir(fd, name)
				if err == nil {
					Close(d)
				}
				return err
			},
			"OpenDirNoSymlinks, absolute": func() error {
				d, err := OpenDirNoSymlinks(AtCWD, abs+`\y`)
				if err == nil {
					Close(d)
				}
				return err
			},
			"RenameNoReplace to it": func() error { return RenameNoReplace(fd, "f", fd, name) },
			"Rename to it":          func() error { return Rename(fd, "f", fd, name) },
			"Link to it":            func() error { return Link(fd, "f", fd, name) },
			"RenameOpen to it": func() error {
				h, err := OpenHandle(fd, "f", HowDelete)
				if err != nil {
					t.Fatal(err)
				}
				defer Close(h)
				return RenameOpen(h, fd, name)
			},
		}
		for what, call := range calls {
			if err := call(); err != syscall.EINVAL {
				t.Errorf("%s %q: %v, want EINVAL", what, name, err)
			}
			if after := names(t, dir); !slices.Equal(after, before) {
				t.Fatalf("%s %q changed the directory: %q, was %q", what, name, after, before)
			}
		}
	}
	// Names Win32 leaves alone: a leading space, an inner dot run, "~"
	// (8.3 forms are resolved alike by NT and Win32), a device name that is
	// not first.
	for _, name := range []string{" lead", "a..b", "PROGRA~1", "x.NUL", "COM10", "NULL"} {
		create(t, fd, name, name)
		if got := content(t, dir, name); got != name {
			t.Fatalf("%q holds %q", name, got)
		}
	}
}
