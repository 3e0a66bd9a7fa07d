//go:build unix

package exactfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/exactfs/exactfs/internal/testfs"
)

// useSystemSymlinks makes list the trusted system links for one test.
func useSystemSymlinks(t *testing.T, list ...string) {
	saved := systemSymlinks
	systemSymlinks = list
	t.Cleanup(func() { systemSymlinks = saved })
}

// rootOnlyBase makes a directory for links under /run, whose directories
// are root's alone, or skips.
func rootOnlyBase(t *testing.T) string {
	testfs.RequireRoot(t) // the rule trusts only root-owned links
	base, err := os.MkdirTemp("/run", "exactfs-syslink-test-")
	if err != nil {
		t.Skipf("no root-only place to build links in: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	if !rootOnlyDirs(base, true) {
		t.Skipf("%s is not under root-only directories", base)
	}
	return base
}

// TestTrustedSystemSymlinkRule replays the ownership rule on symlinks made
// for the test under a root-only directory, through SystemPath and through
// the library's own opens: a trusted link is followed where the caller's
// path is opened (OpenDir, Mkdir, WriteFile), an untrusted one is refused
// with a message that names the link and its target and says to give the
// path under the target, never to remove anything.
func TestTrustedSystemSymlinkRule(t *testing.T) {
	base := rootOnlyBase(t)
	const nobody = 65534
	cases := []struct {
		name  string
		setup func(t *testing.T, link, target string)
		want  bool
	}{
		{"root-owned link and directories", func(t *testing.T, link, target string) {}, true},
		{"relative target", func(t *testing.T, link, target string) {
			os.Remove(link)
			os.Symlink("../data/lock", link)
		}, true},
		{"world-writable target is fine", func(t *testing.T, link, target string) { os.Chmod(target, 0o1777) }, true},
		{"link owned by another user", func(t *testing.T, link, target string) { os.Lchown(link, nobody, nobody) }, false},
		{"target owned by another user", func(t *testing.T, link, target string) { os.Chown(target, nobody, nobody) }, false},
		{"target's parent group-writable", func(t *testing.T, link, target string) { os.Chmod(filepath.Dir(target), 0o775) }, false},
		{"link's directory world-writable", func(t *testing.T, link, target string) { os.Chmod(filepath.Dir(link), 0o1777) }, false},
		{"target's parent owned by another user", func(t *testing.T, link, target string) { os.Chown(filepath.Dir(target), nobody, 0) }, false},
		{"target is itself a symlink", func(t *testing.T, link, target string) {
			os.Rename(target, target+".real")
			os.Symlink(target+".real", target)
		}, false},
		{"dangling", func(t *testing.T, link, target string) { os.Remove(target) }, false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(base, string(rune('a'+i)))
			for _, d := range []string{"sys", "data/lock"} {
				if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			os.Chmod(root, 0o755)
			link, target := filepath.Join(root, "sys", "lock"), filepath.Join(root, "data", "lock")
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			tc.setup(t, link, target)
			useSystemSymlinks(t, link)
			got := SystemPath(link + "/job")
			want := link + "/job"
			if tc.want {
				want = target + "/job"
			}
			if got != want {
				t.Fatalf("SystemPath(%s/job) = %s, want %s", link, got, want)
			}

			d, err := OpenDir(link)
			_, wErr := WriteFile(link+"/job", []byte("x"), 0o600)
			if tc.want {
				if err != nil || wErr != nil {
					t.Fatalf("a trusted link is refused: OpenDir: %v; WriteFile: %v", err, wErr)
				}
				defer d.Close()
				fi, serr := os.Stat(target)
				if serr != nil {
					t.Fatal(serr)
				}
				if dev, ino := d.Inode(); ino != fi.Sys().(*syscall.Stat_t).Ino || dev == 0 {
					t.Fatalf("OpenDir(%s) opened inode %d, not the target's", link, ino)
				}
				if b, err := os.ReadFile(target + "/job"); err != nil || string(b) != "x" {
					t.Fatalf("WriteFile through the link did not land in the target: %q, %v", b, err)
				}
				return
			}
			for what, err := range map[string]error{"OpenDir": err, "WriteFile": wErr} {
				checkSymlinkRefusal(t, what, err, link)
			}
			if _, err := os.Lstat(target + "/job"); err == nil {
				t.Fatal("WriteFile created a file through an untrusted link")
			}
		})
	}
}

// TestSystemSymlinkOrder: macOS has /var as the symlink and /var/run a
// directory beyond it, Debian /var a directory and /var/lock the symlink;
// either order of the list resolves both, and a relative path or one under
// no listed name is left as written.
func TestSystemSymlinkOrder(t *testing.T) {
	root := filepath.Join(rootOnlyBase(t), "nested")
	for _, d := range []string{"private/var/run", "var"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	os.Chmod(root, 0o755)
	os.Symlink("private/var", filepath.Join(root, "mvar"))            // like macOS /var
	os.Symlink("../private/var/run", filepath.Join(root, "var/lock")) // like Debian /var/lock
	for _, list := range [][]string{
		{root + "/mvar/run", root + "/mvar", root + "/var/lock", root + "/var"},
		{root + "/var", root + "/var/lock", root + "/mvar", root + "/mvar/run"},
	} {
		useSystemSymlinks(t, list...)
		for in, want := range map[string]string{
			root + "/mvar/run/job": root + "/private/var/run/job",
			root + "/mvar/x":       root + "/private/var/x",
			root + "/var/lock/job": root + "/private/var/run/job",
			root + "/var/other":    root + "/var/other",
		} {
			if got := SystemPath(in); got != want {
				t.Errorf("list %v: SystemPath(%s) = %s, want %s", list, in, got, want)
			}
		}
		if d, err := OpenDir(root + "/mvar/run"); err != nil {
			t.Errorf("list %v: OpenDir(mvar/run): %v", list, err)
		} else {
			d.Close()
		}
	}
	for _, p := range []string{"var/lock/job", "./x", "/nowhere/x/"} {
		if got := SystemPath(p); got != p {
			t.Errorf("SystemPath(%q) = %q", p, got)
		}
	}
}

// checkSymlinkRefusal: err is the reparse_point refusal of the untrusted
// link, explained as the package doc promises.
func checkSymlinkRefusal(t *testing.T, what string, err error, link string) {
	t.Helper()
	if !errors.Is(err, ErrReparsePoint) {
		t.Fatalf("%s through an untrusted link: %v, want reparse_point", what, err)
	}
	msg := err.Error()
	target, _ := os.Readlink(link)
	if !strings.Contains(msg, link+" is a symlink (to "+target+")") ||
		!strings.Contains(msg, "give the path under its target instead") ||
		!strings.Contains(msg, "one of the system's own links, but not trusted here") ||
		strings.Contains(msg, "remove") {
		t.Errorf("%s: message %q", what, msg)
	}
}

// TestSystemSymlinkOnlyAtTheStart: the rule applies to the path a caller
// gives, never to names beneath an opened directory, and never to a
// relative path (as os.OpenRoot: its own path may lead through symlinks,
// names inside it may not).
func TestSystemSymlinkOnlyAtTheStart(t *testing.T) {
	base := rootOnlyBase(t)
	for _, d := range []string{"sys", "data/lock"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(base, "sys", "lock")
	if err := os.Symlink(filepath.Join(base, "data", "lock"), link); err != nil {
		t.Fatal(err)
	}
	useSystemSymlinks(t, link)
	d, err := OpenDir(link + "/")
	if err != nil {
		t.Fatalf("OpenDir of the trusted link: %v", err)
	}
	d.Close()

	sys, err := OpenDir(filepath.Join(base, "sys"))
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	if _, err := sys.OpenDir("lock"); !errors.Is(err, ErrReparsePoint) {
		t.Errorf("Dir.OpenDir(lock) beneath an opened directory: %v, want reparse_point", err)
	}
	if _, err := sys.WriteFile("lock/job", []byte("x"), 0o600); !errors.Is(err, ErrReparsePoint) {
		t.Errorf("Dir.WriteFile(lock/job): %v, want reparse_point", err)
	}
	t.Chdir(filepath.Join(base, "sys"))
	if _, err := OpenDir("lock"); !errors.Is(err, ErrReparsePoint) {
		t.Errorf("OpenDir of the relative path lock: %v, want reparse_point", err)
	}
}

// TestUntrustedSymlinkMessage: a symlink of the caller's own in the path
// is refused, left alone, and the message names it and where it leads and
// gives the path under the target, without advising any removal.
func TestUntrustedSymlinkMessage(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "real"), 0o700)
	os.Symlink("real", filepath.Join(dir, "link"))
	for what, err := range map[string]error{
		"OpenDir":   func() error { _, err := OpenDir(dir + "/link/sub"); return err }(),
		"WriteFile": func() error { _, err := WriteFile(dir+"/link/s", []byte("x"), 0o600); return err }(),
		"Mkdir":     Mkdir(dir+"/link/d", 0o700),
	} {
		if !errors.Is(err, ErrReparsePoint) {
			t.Fatalf("%s: %v, want reparse_point", what, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, dir+"/link is a symlink (to real)") ||
			!strings.Contains(msg, "give the path under its target instead ("+dir+"/real/") ||
			strings.Contains(msg, "remove") || strings.Contains(msg, "system's own") {
			t.Errorf("%s: message %q", what, msg)
		}
	}
	if names, _ := os.ReadDir(filepath.Join(dir, "real")); len(names) != 0 {
		t.Fatalf("something was created through the symlink: %v", names)
	}
}
