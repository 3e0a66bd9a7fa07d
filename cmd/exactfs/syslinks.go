package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// systemSymlinks are the symlinks an operating system itself puts on the
// paths people use for state and lock files: Debian and Ubuntu make
// /var/lock and /var/run symlinks to /run/lock and /run; macOS makes /tmp,
// /var and /etc symlinks into /private, so even os.TempDir() is under one.
// exactfs follows no symlink on a path, so without an answer for these a
// path such as /var/lock/job could never be locked.
//
// The answer: a path that starts with one of these names is rewritten to
// the symlink's target before anything is opened, but only when the
// symlink and every directory on the way to it and to its target are owned
// by root and writable by nobody else (the target directory itself may be
// writable by others, as /run/lock and /private/tmp are: what lies below it
// is walked without following anything, as on any other path). Only root
// can then change where the name leads, and root can change anything
// anyway. Every other symlink on a path is refused, as before.
var systemSymlinks = []string{"/var/lock", "/var/run", "/tmp", "/var", "/etc"}

// maxSystemHops bounds the rewrites (macOS /var/run: /var, then nothing).
const maxSystemHops = 4

// resolveSystemSymlinks rewrites an absolute path that starts with a
// trusted system symlink (systemSymlinks) to the same path under its
// target. A relative path, or one whose first symlink is not trusted, is
// returned unchanged: the no-follow walk then refuses it with its own error.
func resolveSystemSymlinks(path string) string {
	if !filepath.IsAbs(path) {
		return path
	}
	p := filepath.Clean(path)
	for range maxSystemHops {
		next, ok := resolveOnce(p)
		if !ok {
			break
		}
		p = next
	}
	if p == filepath.Clean(path) {
		return path // keep what the user wrote, trailing separators included
	}
	return p
}

// resolveOnce rewrites the first system symlink on p, looking at the listed
// names p starts with from the shortest: on macOS /var is the symlink and
// /var/run lies beyond it (an lstat of /var/run would follow /var), on
// Debian /var is a directory and /var/lock the symlink. A listed name that
// is a real directory is passed; anything else ends the search.
func resolveOnce(p string) (string, bool) {
	var prefixes []string
	for _, s := range systemSymlinks {
		if p == s || strings.HasPrefix(p, s+"/") {
			prefixes = append(prefixes, s)
		}
	}
	sort.Slice(prefixes, func(i, j int) bool { return len(prefixes[i]) < len(prefixes[j]) })
	for _, link := range prefixes {
		fi, err := os.Lstat(link)
		switch {
		case err == nil && fi.IsDir():
			continue
		case err == nil && fi.Mode()&os.ModeSymlink != 0:
			target, ok := trustedTarget(link)
			if !ok {
				return "", false
			}
			return filepath.Join(target, strings.TrimPrefix(p, link)), true
		}
		return "", false
	}
	return "", false
}

// trustedTarget returns the target of the system symlink link when the
// ownership rule of systemSymlinks holds for it, else false.
func trustedTarget(link string) (string, bool) {
	fi, err := os.Lstat(link)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 || !rootOwned(fi) {
		return "", false
	}
	if !rootOnlyDirs(filepath.Dir(link), true) {
		return "", false
	}
	t, err := os.Readlink(link)
	if err != nil || t == "" {
		return "", false
	}
	if !filepath.IsAbs(t) {
		t = filepath.Join(filepath.Dir(link), t)
	}
	t = filepath.Clean(t)
	if !rootOnlyDirs(filepath.Dir(t), true) || !rootOnlyDirs(t, false) {
		return "", false
	}
	return t, true
}

// rootOnlyDirs reports whether dir is a real directory (not a symlink)
// owned by root. With ancestors set, dir and every directory above it must
// be, and must also be writable by nobody but root (no group or other write
// bit); without it only dir itself is checked, for type and owner.
func rootOnlyDirs(dir string, ancestors bool) bool {
	for {
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() || !rootOwned(fi) {
			return false
		}
		if !ancestors {
			return true
		}
		if fi.Mode().Perm()&0o022 != 0 {
			return false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return true
		}
		dir = parent
	}
}

// symlinkOnPath finds the first symlink among the directories of path (the
// parents of its final name, and the final name too when path ends with a
// separator, as the paths of directory errors do), for a message that says
// what was refused and where it leads. It only looks.
func symlinkOnPath(path string) (link, target string) {
	clean := filepath.Clean(path)
	dir := filepath.Dir(clean)
	if strings.HasSuffix(path, string(filepath.Separator)) {
		dir = clean
	}
	var parts []string
	for d := dir; ; d = filepath.Dir(d) {
		parts = append(parts, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i := len(parts) - 1; i >= 0; i-- {
		fi, err := os.Lstat(parts[i])
		if err != nil {
			return "", ""
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			t, _ := os.Readlink(parts[i])
			return parts[i], t
		}
	}
	return "", ""
}

// symlinkHint explains a refusal caused by a symlink among the directories
// of path, or returns "".
func symlinkHint(path string) string {
	link, target := symlinkOnPath(path)
	if link == "" {
		return ""
	}
	return fmt.Sprintf("%s is a symlink (to %s), and exactfs follows no symlink on a path: nothing was touched. "+
		"Do not remove it. If you trust where it leads, give the path under its target instead; "+
		"the system's own links (%s) are followed when root owns them and everything they lead through",
		link, target, strings.Join(systemSymlinks, ", "))
}
