//go:build unix

package exactfs_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/exactfs/exactfs"
)

func TestMkdirAllMakesMissingDirectoriesWithExactMode(t *testing.T) {
	// The mode is exact: the umask takes nothing away.
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	root := t.TempDir()
	path := filepath.Join(root, "a", "b", "c")
	if err := exactfs.MkdirAll(path, 0o750); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(root, "a"), filepath.Join(root, "a", "b"), path} {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if !fi.IsDir() || fi.Mode().Perm() != 0o750 {
			t.Fatalf("%s: %v, want a 0750 directory", p, fi.Mode())
		}
	}
	// Existing directories are left as they are, path itself included.
	if err := os.Chmod(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := exactfs.MkdirAll(path, 0o750); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(path); fi.Mode().Perm() != 0o700 {
		t.Fatalf("an existing directory was changed: %v", fi.Mode())
	}
	// A relative path is made beneath the working directory.
	t.Chdir(root)
	if err := exactfs.MkdirAll(filepath.Join("rel", "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(root, "rel", "x")); err != nil || !fi.IsDir() {
		t.Fatalf("relative MkdirAll: %v %v", fi, err)
	}
}

// A symlink in an existing component is refused before anything is made:
// os.MkdirAll would make the missing directories at the symlink's target.
func TestMkdirAllRefusesSymlinkAndMakesNothingThroughIt(t *testing.T) {
	root := t.TempDir()
	elsewhere := filepath.Join(root, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	err := exactfs.MkdirAll(filepath.Join(root, "link", "b", "c"), 0o700)
	if exactfs.CodeOf(err) != exactfs.CodeReparsePoint {
		t.Fatalf("got %v (code %q), want reparse_point", err, exactfs.CodeOf(err))
	}
	if names, _ := os.ReadDir(elsewhere); len(names) != 0 {
		t.Fatalf("something was made through the symlink: %v", names)
	}
	// A final component that is a symlink is refused too, not followed.
	if err := os.Symlink(elsewhere, filepath.Join(root, "last")); err != nil {
		t.Fatal(err)
	}
	if err := exactfs.MkdirAll(filepath.Join(root, "last"), 0o700); exactfs.CodeOf(err) != exactfs.CodeReparsePoint {
		t.Fatalf("a symlink as the last component: %v (code %q), want reparse_point", err, exactfs.CodeOf(err))
	}
}

func TestMkdirAllRefusesFileInTheWay(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{file, filepath.Join(file, "sub")} {
		if err := exactfs.MkdirAll(p, 0o700); exactfs.CodeOf(err) != exactfs.CodeNotDirectory {
			t.Fatalf("MkdirAll(%s): %v (code %q), want not_directory", p, err, exactfs.CodeOf(err))
		}
	}
}
