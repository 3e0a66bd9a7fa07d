//go:build unix

package exactfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// macTemp builds, under a root-only directory, the shape of a Mac's temp
// dir: a trusted root-owned link var -> private/var (macOS /var) with a
// user's directory beneath it (TMPDIR, /var/folders/…/T), and makes the
// link a trusted system symlink for the test. It returns the link, its
// target and the temp dir as a user gives it (under the link).
func macTemp(t *testing.T) (link, target, tmp string) {
	root := filepath.Join(rootOnlyBase(t), "mac")
	target = filepath.Join(root, "private", "var")
	if err := os.MkdirAll(filepath.Join(target, "folders", "xy", "T"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(root, 0o755)
	link = filepath.Join(root, "var")
	if err := os.Symlink("private/var", link); err != nil {
		t.Fatal(err)
	}
	useSystemSymlinks(t, link)
	return link, target, filepath.Join(link, "folders", "xy", "T")
}

// TestMessagesSpellPathsAsGiven (issue 24: on macOS every message showed
// /private/var/folders/… for a path under TMPDIR): a path under a trusted
// system link is still opened through the link's target (SystemPath), but
// the refusal of a symlink of the user's own beneath it names the symlink
// and the path to give instead as the user wrote them, and SymlinkInPath
// returns the link spelled that way. On the code before AsGiven both
// showed the target's spelling (…/private/var/…).
func TestMessagesSpellPathsAsGiven(t *testing.T) {
	_, target, tmp := macTemp(t)
	if got := SystemPath(tmp + "/x"); got != filepath.Join(target, "folders", "xy", "T", "x") {
		t.Fatalf("the walk no longer goes through the target: SystemPath = %s", got)
	}
	os.Mkdir(filepath.Join(tmp, "real"), 0o700)
	os.Symlink("real", filepath.Join(tmp, "link"))
	for what, err := range map[string]error{
		"OpenDir":   func() error { _, err := OpenDir(tmp + "/link/sub"); return err }(),
		"WriteFile": func() error { _, err := WriteFile(tmp+"/link/s", []byte("x"), 0o600); return err }(),
		"Mkdir":     Mkdir(tmp+"/link/d", 0o700),
	} {
		if !errors.Is(err, ErrReparsePoint) {
			t.Fatalf("%s: %v, want reparse_point", what, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, tmp+"/link is a symlink (to real)") ||
			!strings.Contains(msg, "give the path under its target instead ("+tmp+"/real/") ||
			strings.Contains(msg, "/private/") {
			t.Errorf("%s: message %q", what, msg)
		}
	}
	link, to, ok := SymlinkInPath(tmp + "/link/s")
	if !ok || link != tmp+"/link" || to != "real" {
		t.Errorf("SymlinkInPath = %q, %q, %v; want %q, real", link, to, ok, tmp+"/link")
	}
}

// TestAsGiven: the targets SystemPath followed are put back as their links,
// in reverse order (a Mac's /var/run: /var, then a directory; Debian's
// /var/lock: one link); anything else is returned unchanged.
func TestAsGiven(t *testing.T) {
	link, target, tmp := macTemp(t)
	for _, c := range []struct{ given, p, want string }{
		{tmp + "/s", target + "/folders/xy/T/s.lock", tmp + "/s.lock"},
		{tmp + "/s", target + "/folders/xy/T/", tmp + "/"},
		{tmp, target, link},
		{link + "/", target + "/folders", link + "/folders"},
		{tmp + "/s", "/elsewhere/s.lock", "/elsewhere/s.lock"},                    // not beneath the target
		{tmp + "/s", target + "x/s", target + "x/s"},                              // a sibling sharing a prefix
		{"relative/s", target + "/folders/s", target + "/folders/s"},              // no system link followed
		{filepath.Dir(link) + "/other", target + "/folders", target + "/folders"}, // the same
		{tmp + "/s", "relative", "relative"},
	} {
		if got := AsGiven(c.given, c.p); got != c.want {
			t.Errorf("AsGiven(%q, %q) = %q, want %q", c.given, c.p, got, c.want)
		}
	}

	// Two hops: a system link reached through another (as a Mac's /var/run
	// would be, were it a link under /var).
	root := filepath.Dir(link)
	os.MkdirAll(filepath.Join(root, "run"), 0o755)
	os.Symlink(filepath.Join(root, "run"), filepath.Join(target, "runlink"))
	useSystemSymlinks(t, link, target+"/runlink")
	given := link + "/runlink/job"
	if got := SystemPath(given); got != root+"/run/job" {
		t.Fatalf("SystemPath(%s) = %s", given, got)
	}
	if got := AsGiven(given, root+"/run/job.lock"); got != link+"/runlink/job.lock" {
		t.Errorf("AsGiven over two hops = %q", got)
	}
}
