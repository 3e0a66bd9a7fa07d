package statelock

import (
	"os"
	"path/filepath"
	"testing"
)

// The modes the lock's records and the directories it makes read as on
// Windows, where Go reports 0666 for a file that is not read-only and 0777
// for a directory: there are no POSIX modes. What keeps a record private
// there is the directory's DACL, which the record inherits, as the
// reference's records do (libuv maps the mode 0600 to "not read-only").
const (
	recordMode = os.FileMode(0o666)
	dirPerm    = os.FileMode(0o777)
)

// symlinksHere reports whether a symlink can be planted here: on real
// Windows with the privilege (or Developer Mode), never under Wine 8,
// where CreateSymbolicLinkW reports success and makes nothing. Without one
// the part of a test that plants symlinks is left out, saying so; it is
// listed in .ci/wine/needs-real-windows.md.
func symlinksHere(t *testing.T) bool {
	t.Helper()
	dir := t.TempDir()
	link := filepath.Join(dir, "link")
	err := os.Symlink(dir, link)
	if err == nil {
		if fi, lerr := os.Lstat(link); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			os.Remove(link)
			return true
		}
		err = os.ErrNotExist
	}
	t.Logf("needs real Windows: the symlink part of this test is left out: no symlink can be made here (%v)", err)
	return false
}
