//go:build unix

package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"golang.org/x/sys/unix"
)

func TestApplyRepairsModesVerifyRefusesBefore(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "d")
	file := filepath.Join(root, "f")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	chmod(t, dir, 0o755)
	chmod(t, file, 0o644)
	for _, c := range []struct {
		path string
		kind Kind
		want os.FileMode
	}{{dir, Directory, 0o700}, {file, File, 0o600}} {
		err := VerifyOwnerOnlyPath(c.path, c.kind)
		wantCode(t, err, CodeModeMismatch)
		if !errors.Is(err, ErrModeMismatch) {
			t.Fatalf("errors.Is(%v, ErrModeMismatch) = false", err)
		}
		if err := ApplyOwnerOnlyPath(c.path, c.kind); err != nil {
			t.Fatalf("apply %s: %v", c.path, err)
		}
		if got := mode(t, c.path); got != c.want {
			t.Fatalf("%s: mode %v after apply, want %v", c.path, got, c.want)
		}
		if err := VerifyOwnerOnlyPath(c.path, c.kind); err != nil {
			t.Fatalf("verify after apply: %v", err)
		}
	}
	// Setuid, setgid and sticky bits are not owner-only either.
	chmod(t, dir, 0o700|os.ModeSticky)
	wantCode(t, VerifyOwnerOnlyPath(dir, Directory), CodeModeMismatch)
}

func TestWrongKindRefused(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "f")
	os.WriteFile(file, nil, 0o600)
	wantCode(t, VerifyOwnerOnlyPath(file, Directory), exactfs.CodeNotDirectory)
	wantCode(t, VerifyOwnerOnlyPath(root, File), exactfs.CodeNotRegularFile)
	wantCode(t, VerifyOwnerOnlyPath(filepath.Join(root, "missing"), File), exactfs.CodeNotFound)
}

func TestFIFORefusedWithoutBlocking(t *testing.T) {
	root := t.TempDir()
	fifo := filepath.Join(root, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	within(t, 5*time.Second, func() {
		wantCode(t, VerifyOwnerOnlyPath(fifo, Directory), exactfs.CodeNotDirectory)
		wantCode(t, ApplyOwnerOnlyPath(fifo, Directory), exactfs.CodeNotDirectory)
		wantCode(t, ApplyOwnerOnlyPath(fifo, File), exactfs.CodeNotRegularFile)
	})
	if got := mode(t, fifo); got != 0o644 {
		t.Fatalf("FIFO mode changed to %v", got)
	}
}

func TestSymlinkRefusedTargetUntouched(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real")
	os.Mkdir(real, 0o755)
	chmod(t, real, 0o755)
	target := filepath.Join(real, "f")
	os.WriteFile(target, []byte("x"), 0o644)
	chmod(t, target, 0o644)
	os.Symlink(target, filepath.Join(root, "filelink"))
	os.Symlink(real, filepath.Join(root, "dirlink"))

	for _, c := range []struct {
		path string
		kind Kind
	}{
		{filepath.Join(root, "filelink"), File},     // final component
		{filepath.Join(root, "dirlink"), Directory}, // final component, directory
		{filepath.Join(root, "dirlink", "f"), File}, // ancestor
		{filepath.Join(root, "dirlink", "."), Directory},
	} {
		for _, apply := range []bool{false, true} {
			var err error
			if apply {
				err = ApplyOwnerOnlyPath(c.path, c.kind)
			} else {
				err = VerifyOwnerOnlyPath(c.path, c.kind)
			}
			wantCode(t, err, exactfs.CodeReparsePoint)
			if !errors.Is(err, exactfs.ErrReparsePoint) {
				t.Fatal("errors.Is ErrReparsePoint false")
			}
		}
	}
	if mode(t, real) != 0o755 || mode(t, target) != 0o644 {
		t.Fatalf("a symlink's target was changed: dir %v file %v", mode(t, real), mode(t, target))
	}
}

// The modes are exact whatever the umask: files 0600, directories 0700.
func TestStoreModesIgnoreUmask(t *testing.T) {
	old := unix.Umask(0)
	defer unix.Umask(old)
	s := newStore(t)
	if err := s.Mkdir("d"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Publish("d/p", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Replace("d/r", nil); err != nil {
		t.Fatal(err)
	}
	unix.Umask(0o777)
	if _, err := s.Publish("d/q", nil); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{"": 0o700, "d": 0o700, "d/p": 0o600, "d/r": 0o600, "d/q": 0o600} {
		if got := mode(t, filepath.Join(s.Path(), p)); got != want {
			t.Errorf("%s: mode %v, want %v", p, got, want)
		}
	}
}
