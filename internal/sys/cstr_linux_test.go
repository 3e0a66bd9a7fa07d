//go:build linux

package sys

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Issue 25: Lstat, Open, Rename and OpenDirNoSymlinks copy a name that
// fits to the stack instead of the heap (cstr_linux.go). They must answer
// exactly as x/sys's calls do: the same object, the same errno, at every
// length around the buffer's size, and a NUL in a name is refused without
// a system call, as x/sys refuses it.
func TestStackNamesAnswerAsXSys(t *testing.T) {
	dir := t.TempDir()
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	if err := os.Symlink("nowhere", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	names := []string{"f", "link", "absent", "a\x00b", ""}
	for _, n := range []int{254, 255, 256, 257} {
		names = append(names, strings.Repeat("n", n))
	}
	for _, name := range names {
		if len(name) > 0 && len(name) <= 255 && !strings.Contains(name, "\x00") && name != "link" && name != "absent" {
			if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		var want unix.Stat_t
		werr := unix.Fstatat(dfd, name, &want, unix.AT_SYMLINK_NOFOLLOW)
		got, gerr := Lstat(dfd, name)
		if !sameErrno(gerr, werr) || (gerr == nil && (got.Ino != want.Ino || got.Mode != modeOf(want.Mode))) {
			t.Errorf("Lstat(%.12q… len %d) = %+v, %v; x/sys: ino %d, %v", name, len(name), got, gerr, want.Ino, werr)
		}
		fd, gerr := Open(dfd, name, os.O_RDONLY, 0)
		wfd, werr := unix.Openat(dfd, name, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if !sameErrno(gerr, werr) {
			t.Errorf("Open(len %d) = %v; x/sys: %v", len(name), gerr, werr)
		}
		if gerr == nil {
			sameOpened(t, fmt.Sprintf("Open(len %d)", len(name)), fd, wfd)
		}
	}
	if _, err := Lstat(dfd, "absent"); !errors.Is(err, fs.ErrNotExist) || err != unix.ENOENT {
		t.Errorf("Lstat of an absent name: %v, want ENOENT (errors.Is fs.ErrNotExist)", err)
	}
	// Rename, both names fitting and not.
	long := strings.Repeat("r", 255)
	if err := os.WriteFile(filepath.Join(dir, "r1"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, step := range [][2]string{{"r1", long}, {long, "r2"}, {"r2", strings.Repeat("r", 256)}, {"absent", "r3"}, {"r2", "a\x00b"}} {
		gerr := Rename(dfd, step[0], dfd, step[1])
		var want error
		switch {
		case len(step[1]) > 255:
			want = unix.ENAMETOOLONG
		case step[0] == "absent":
			want = unix.ENOENT
		case strings.Contains(step[1], "\x00"):
			want = unix.EINVAL
		}
		if !sameErrno(gerr, want) {
			t.Errorf("Rename(%.8q…, %.8q…) = %v, want %v", step[0], step[1], gerr, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "r2")); err != nil {
		t.Errorf("after the renames r2 should exist: %v", err)
	}
	// The one-call walk, by a path that fits and one that does not.
	deep := dir
	for len(deep) < 300 {
		deep = filepath.Join(deep, "dddddddddddddddddddd")
	}
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, deep, filepath.Join(dir, "link"), dir + "/a\x00b"} {
		fd, gerr := OpenDirNoSymlinks(AtCWD, p)
		wfd, werr := unix.Openat2(AtCWD, p, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK, Resolve: unix.RESOLVE_NO_SYMLINKS})
		if !sameErrno(gerr, werr) {
			t.Errorf("OpenDirNoSymlinks(len %d) = %v; x/sys: %v", len(p), gerr, werr)
		}
		if gerr == nil {
			sameOpened(t, fmt.Sprintf("OpenDirNoSymlinks(len %d)", len(p)), fd, wfd)
		}
	}
}

func sameErrno(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var ea, eb unix.Errno
	return errors.As(a, &ea) && errors.As(b, &eb) && ea == eb
}

// sameOpened checks that fd (ours) and wfd (x/sys's) are open on one
// inode, and closes both.
func sameOpened(t *testing.T, what string, fd, wfd int) {
	t.Helper()
	a, _ := Fstat(fd)
	b, _ := Fstat(wfd)
	if a.Ino != b.Ino {
		t.Errorf("%s opened inode %d, x/sys %d", what, a.Ino, b.Ino)
	}
	unix.Close(fd)
	unix.Close(wfd)
}
