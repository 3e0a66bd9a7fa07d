package exactfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// systemSymlinks are the symlinks operating systems themselves put on the
// paths people use for state and lock files: Debian and Ubuntu make
// /var/lock and /var/run symlinks to /run/lock and /run; macOS makes /tmp,
// /var and /etc symlinks into /private, so even os.TempDir() is under one.
// The package doc ("System symlinks") states the rule SystemPath applies
// to them. Tests replace the list with links of their own.
var systemSymlinks = []string{"/var/lock", "/var/run", "/tmp", "/var", "/etc"}

// maxSystemHops bounds the rewrites of one path (macOS /var/run: /var, and
// then /private/var/run is a directory).
const maxSystemHops = 4

// SystemSymlinks returns the names SystemPath may rewrite at the start of
// a path, whether or not they exist (or are trusted) on this system.
func SystemSymlinks() []string { return append([]string(nil), systemSymlinks...) }

// SystemPath returns path with a trusted system symlink at its start
// replaced by the symlink's target, as every function of this package that
// takes a path does before it opens it: "/var/lock/job" on Debian is
// "/run/lock/job", "/tmp/x" on macOS "/private/tmp/x". A relative path, a
// path that starts with no listed name, and one whose system symlink is not
// trusted (see the package doc) are returned unchanged; opening them then
// refuses the symlink with reparse_point. It follows nothing else, and
// nothing at all on systems without uid 0 (Windows).
func SystemPath(path string) string {
	p, hops := systemHops(path)
	if len(hops) == 0 {
		return path // as written, trailing separators included
	}
	return p
}

// systemHop is one rewrite of SystemPath: the trusted link at the start of
// the path and the target it was replaced with.
type systemHop struct{ link, target string }

// systemHops is SystemPath with the rewrites it made, in order; the path
// is clean when there was any.
func systemHops(path string) (string, []systemHop) {
	if !filepath.IsAbs(path) {
		return path, nil
	}
	p := filepath.Clean(path)
	var hops []systemHop
	for range maxSystemHops {
		next, hop, ok := resolveSystemOnce(p)
		if !ok {
			break
		}
		p, hops = next, append(hops, hop)
	}
	return p, hops
}

// AsGiven spells p, a path at or beneath SystemPath(given), the way given
// spells it: the targets of the trusted system symlinks SystemPath followed
// on given are put back as their links. It is for what a person reads: on
// macOS a path under os.TempDir() is opened as /private/var/folders/…, and
// is shown, as it was given, as /var/folders/…. Opening either spelling
// reaches the same directory by the same walk (SystemPath). A p that is not
// beneath what given resolves to, or a given that follows no system
// symlink, returns p unchanged.
func AsGiven(given, p string) string {
	_, hops := systemHops(given)
	if len(hops) == 0 || !filepath.IsAbs(p) {
		return p
	}
	q := filepath.Clean(p)
	for i := len(hops) - 1; i >= 0; i-- {
		h := hops[i]
		switch {
		case q == h.target:
			q = h.link
		case strings.HasPrefix(q, h.target+"/"):
			q = h.link + strings.TrimPrefix(q, h.target)
		default:
			return p
		}
	}
	if strings.HasSuffix(p, "/") && !strings.HasSuffix(q, "/") {
		q += "/"
	}
	return q
}

// resolveSystemOnce rewrites the first system symlink on the clean path p.
// The listed names p starts with are looked at from the shortest: on macOS
// /var is the symlink and /var/run lies beyond it (an lstat of /var/run
// would follow /var); on Debian /var is a directory and /var/lock the
// symlink. A listed name that is a real directory is passed; anything else
// ends the search.
func resolveSystemOnce(p string) (string, systemHop, bool) {
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
			target, ok := trustedSystemTarget(link)
			if !ok {
				return "", systemHop{}, false
			}
			return filepath.Join(target, strings.TrimPrefix(p, link)), systemHop{link, target}, true
		}
		return "", systemHop{}, false
	}
	return "", systemHop{}, false
}

// trustedSystemTarget returns the clean absolute target of the symlink
// link when the rule holds for it: the link is root's, every directory
// above it is a real directory owned by root and writable by nobody else,
// and so is every directory above its target; the target itself is a real
// directory owned by root (it may be writable by others, as /run/lock and
// /private/tmp are, because what lies beneath it is walked without
// following anything).
func trustedSystemTarget(link string) (string, bool) {
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
// be, and none may be writable by group or others; without it only dir
// itself is checked, for type and owner.
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

// openPath is openPathNoFollow for every caller. A caller's own path (no
// start directory) that is refused because of a symlink is tried once more
// with a trusted system symlink at its start rewritten (SystemPath), and a
// refusal that stands is explained (explainSymlink). Names beneath a start
// directory follow nothing, and the usual path pays nothing for the rule.
func openPath(op, name string, start *Dir, abs bool, comps []string) (handle, error) {
	h, err := openPathNoFollow(op, name, start, abs, comps)
	if err == nil || start != nil {
		return h, err
	}
	// Declared past the common case: errors.As makes e escape, an
	// allocation on every open of a path otherwise.
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeReparsePoint {
		return h, err
	}
	if sc := systemComps(abs, comps); len(sc) != len(comps) || strings.Join(sc, "/") != strings.Join(comps, "/") {
		if h, err = openPathNoFollow(op, name, nil, abs, sc); err == nil {
			return h, nil
		}
		comps = sc
	}
	return handle{}, explainSymlink(err, name, abs, comps)
}

// systemComps applies SystemPath to the directory components of an
// absolute path given to a function of this package (openPath with no
// start directory) and returns the components of the result.
func systemComps(abs bool, comps []string) []string {
	if !abs || len(comps) == 0 {
		return comps
	}
	joined := "/" + strings.Join(comps, "/")
	p := SystemPath(joined)
	if p == joined {
		return comps
	}
	return strings.Split(strings.TrimPrefix(p, "/"), "/")
}

// explainSymlink rewrites the detail of a reparse_point refusal of the
// directory components comps of a caller's path name, so that it names the
// symlink, where it leads, and what the caller can do: give the path under
// the target, if they trust it. It never advises removing anything. Any
// other error, or one whose symlink is no longer there to look at, is
// returned as it is.
func explainSymlink(err error, name string, abs bool, comps []string) error {
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeReparsePoint || len(comps) == 0 {
		return err
	}
	dir := strings.Join(comps, "/")
	if abs {
		dir = "/" + dir
	}
	link, target, ok := symlinkInPath(dir + "/")
	if !ok {
		return err
	}
	under := target
	if !filepath.IsAbs(under) {
		under = filepath.Join(filepath.Dir(link), under)
	}
	suggest := under
	if p := filepath.Clean(SystemPath(filepath.Clean(name))); strings.HasPrefix(p, link+"/") {
		suggest = filepath.Join(under, strings.TrimPrefix(p, link))
	}
	// The walk went through the trusted system links (link is under their
	// targets); the message names the paths as the caller wrote them.
	isSystem := slices.Contains(systemSymlinks, link)
	link, suggest = AsGiven(name, link), AsGiven(name, suggest)
	detail := fmt.Sprintf("%s is a symlink (to %s), and exactfs follows no symlink in a path: nothing was touched", link, target)
	if isSystem {
		detail += "; it is one of the system's own links, but not trusted here, because it, or a directory on the way to it or to its target, is not root's alone"
	}
	detail += "; if you trust where it leads, give the path under its target instead (" + suggest + ")"
	e.Detail = detail
	return err
}

// SymlinkInPath finds the first symlink among the directories of path, from
// the top, after SystemPath has rewritten a trusted system link at its
// start: the symlink a reparse_point refusal of a directory in path is
// about. The directories are those above path's last name, and the last
// name too when path ends with a separator. link is spelled as path
// spells it (AsGiven: /var/folders/…/link on macOS, not /private/var/…);
// target is the link's own content. It only looks, and reports false when
// it finds no symlink (or the path has changed since).
func SymlinkInPath(path string) (link, target string, ok bool) {
	link, target, ok = symlinkInPath(path)
	if ok {
		link = AsGiven(filepath.Clean(path), link)
	}
	return link, target, ok
}

// symlinkInPath is SymlinkInPath with link as the walk reached it, beneath
// the targets of the system links followed.
func symlinkInPath(path string) (link, target string, ok bool) {
	clean := SystemPath(filepath.Clean(path))
	dir := filepath.Dir(clean)
	if strings.HasSuffix(path, string(filepath.Separator)) || strings.HasSuffix(path, "/") {
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
			return "", "", false
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			t, err := os.Readlink(parts[i])
			if err != nil {
				return "", "", false
			}
			return parts[i], t, true
		}
	}
	return "", "", false
}
