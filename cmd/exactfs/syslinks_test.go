//go:build unix

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/exactfs/exactfs/internal/testfs"
)

// TestTrustedSystemSymlinkRule replays the ownership rule of systemSymlinks
// on symlinks made for the test under a root-only directory: resolved only
// when the link, the directories to it and those to its target are root's
// and writable by nobody else.
func TestTrustedSystemSymlinkRule(t *testing.T) {
	testfs.RequireRoot(t) // the rule trusts only root-owned links
	base, err := os.MkdirTemp("/run", "exactfs-syslink-test-")
	if err != nil {
		t.Skipf("no root-only place to build links in: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if !rootOnlyDirs(base, true) {
		t.Skipf("%s is not under root-only directories", base)
	}
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
			saved := systemSymlinks
			systemSymlinks = []string{link}
			defer func() { systemSymlinks = saved }()
			got := resolveSystemSymlinks(link + "/job")
			want := link + "/job"
			if tc.want {
				want = target + "/job"
			}
			if got != want {
				t.Fatalf("resolveSystemSymlinks(%s/job) = %s, want %s", link, got, want)
			}
		})
	}
	// macOS: /var is the symlink and /var/run a directory beyond it; Debian:
	// /var a directory and /var/lock the symlink. Both orders of the list.
	root := filepath.Join(base, "nested")
	for _, d := range []string{"private/var/run", "var"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	os.Chmod(root, 0o755)
	os.Symlink("private/var", filepath.Join(root, "mvar"))            // like macOS /var
	os.Symlink("../private/var/run", filepath.Join(root, "var/lock")) // like Debian /var/lock
	saved := systemSymlinks
	defer func() { systemSymlinks = saved }()
	for _, list := range [][]string{
		{root + "/mvar/run", root + "/mvar", root + "/var/lock", root + "/var"},
		{root + "/var", root + "/var/lock", root + "/mvar", root + "/mvar/run"},
	} {
		systemSymlinks = list
		for in, want := range map[string]string{
			root + "/mvar/run/job": root + "/private/var/run/job",
			root + "/mvar/x":       root + "/private/var/x",
			root + "/var/lock/job": root + "/private/var/run/job",
			root + "/var/other":    root + "/var/other",
		} {
			if got := resolveSystemSymlinks(in); got != want {
				t.Errorf("list %v: resolveSystemSymlinks(%s) = %s, want %s", list, in, got, want)
			}
		}
	}
	systemSymlinks = saved

	// Relative paths and paths not under a listed link are left as written.
	for _, p := range []string{"var/lock/job", "./x", "/nowhere/x/"} {
		if got := resolveSystemSymlinks(p); got != p {
			t.Errorf("resolveSystemSymlinks(%q) = %q", p, got)
		}
	}
}
