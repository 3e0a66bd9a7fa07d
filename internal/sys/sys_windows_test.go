package sys

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// The tests of the Windows primitives. They run under Wine in CI
// (.ci/wine-lane.sh) and on real Windows. What Wine 8 cannot show
// (reparse points, POSIX delete and rename semantics) is tested in
// reparse_windows_test.go and posix_windows_test.go, skipped under Wine
// only.

func TestMain(m *testing.M) {
	// These tests prove the primitives themselves, under the gate that
	// keeps every caller of this package failing closed (see ready).
	// TestGateFailsClosed checks the gate. A gate child decides nothing
	// itself: it shows what the opt-in did at start.
	if dir := os.Getenv(gateChildEnv); dir != "" {
		os.Exit(gateChild(dir))
	}
	ready, gateWhy = true, "opened by internal/sys's own TestMain"
	if path := os.Getenv(lockChildEnv); path != "" {
		os.Exit(lockChild(path))
	}
	os.Exit(m.Run())
}

// skipUnderWine skips a test of what Wine 8 does not implement; on real
// Windows it runs.
func skipUnderWine(t *testing.T, what string) {
	t.Helper()
	if underWine() {
		t.Skipf("needs real Windows: Wine 8 has no %s", what)
	}
}

// dirHandle opens dir (an absolute path) as a directory handle, closed at
// the end of the test.
func dirHandle(t *testing.T, dir string) int {
	t.Helper()
	fd, err := OpenDir(AtCWD, dir)
	if err != nil {
		t.Fatalf("OpenDir(%s): %v", dir, err)
	}
	t.Cleanup(func() { Close(fd) })
	return fd
}

// create makes name beneath dirfd with create-new and writes data.
func create(t *testing.T, dirfd int, name, data string) {
	t.Helper()
	fd, err := Open(dirfd, name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	defer Close(fd)
	if err := Write(fd, []byte(data)); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
}

// content reads name beneath dir through Go's os package, an independent
// path to the same file.
func content(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return string(b)
}

func wantErr(t *testing.T, what string, got, want error) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: got %v (%#v), want %v", what, got, got, want)
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// TestGateFailsClosed: with the gate shut (as it is in every program
// started without the opt-in, EXACTFS_WINDOWS=unverified), every call refuses with
// ErrUnsupported and changes nothing, as before the primitives existed.
func TestGateFailsClosed(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	fd := dirHandle(t, dir)
	ff, err := Open(fd, "f", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(ff)
	before := names(t, dir)

	ready = false
	defer func() { ready = true }()
	f := filepath.Join(dir, "f")
	calls := map[string]func() error{
		"Open": func() error {
			_, err := Open(AtCWD, filepath.Join(dir, "new"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			return err
		},
		"Open/existing":       func() error { _, err := Open(fd, "f", os.O_RDONLY, 0); return err },
		"OpenDir":             func() error { _, err := OpenDir(AtCWD, dir); return err },
		"OpenDirNoSymlinks":   func() error { _, err := OpenDirNoSymlinks(AtCWD, dir); return err },
		"OpenHandle":          func() error { _, err := OpenHandle(fd, "f", HowDelete); return err },
		"Close":               func() error { return Close(-1) },
		"Dup":                 func() error { _, err := Dup(ff); return err },
		"Fstat":               func() error { _, err := Fstat(ff); return err },
		"Lstat":               func() error { _, err := Lstat(AtCWD, f); return err },
		"Pread":               func() error { _, err := Pread(ff, make([]byte, 1), 0); return err },
		"Write":               func() error { return Write(ff, []byte("y")) },
		"Fchmod":              func() error { return Fchmod(ff, 0o600) },
		"Fchown":              func() error { return Fchown(ff, 0, 0) },
		"Ftruncate":           func() error { return Ftruncate(ff, 0) },
		"Seek":                func() error { return Seek(ff, 0) },
		"Mkdir":               func() error { return Mkdir(fd, "sub", 0o700) },
		"Unlink":              func() error { return Unlink(fd, "f") },
		"Rmdir":               func() error { return Rmdir(fd, "d") },
		"Link":                func() error { return Link(fd, "f", fd, "g") },
		"Rename":              func() error { return Rename(fd, "f", fd, "g") },
		"RenameNoReplace":     func() error { return RenameNoReplace(fd, "f", fd, "g") },
		"RenameOpen":          func() error { return RenameOpen(ff, fd, "g") },
		"DeleteOpen":          func() error { return DeleteOpen(ff) },
		"Exchange":            func() error { return Exchange(fd, "f", fd, "d") },
		"Fsync":               func() error { return Fsync(ff) },
		"ReadDirNames":        func() error { _, err := ReadDirNames(fd); return err },
		"ReadDirEntries":      func() error { _, err := ReadDirEntries(fd); return err },
		"TryFlock":            func() error { return TryFlock(ff) },
		"OFDLock":             func() error { return OFDLock(ff, 1<<39, 1) },
		"OFDUnlock":           func() error { return OFDUnlock(ff, 1<<39, 1) },
		"OFDReadLock":         func() error { return OFDReadLock(ff, 1<<39, 1) },
		"OFDTryLock":          func() error { return OFDTryLock(ff, 1<<39, 1) },
		"OFDConflict":         func() error { _, _, err := OFDConflict(ff, 1<<39, 1); return err },
		"ProbeNoWriter":       func() error { return ProbeNoWriter(ff) },
		"ProbeUnopened":       func() error { return ProbeUnopened(ff) },
		"OwnerOnly":           func() error { return OwnerOnly(fd, true) },
		"MakeOwnerOnly":       func() error { return MakeOwnerOnly(fd, true) },
		"OwnedByDefaultOwner": func() error { _, err := OwnedByDefaultOwner(fd); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s with the gate shut: %v, want ErrUnsupported", name, err)
		}
	}
	if held, known := OFDHeld(ff, 1<<39, 1); held || known {
		t.Errorf("OFDHeld with the gate shut: held %v known %v, want unknown", held, known)
	}
	ready = true
	if after := names(t, dir); !slices.Equal(after, before) {
		t.Fatalf("the directory changed with the gate shut:\nbefore %q\nafter  %q", before, after)
	}
	if got := content(t, dir, "f"); got != "x" {
		t.Fatalf("f changed with the gate shut: %q", got)
	}
}

// TestCreateNewCollides: O_CREATE|O_EXCL and Mkdir refuse any object at
// the name (file, directory, another spelling of the name, a hard link)
// with EEXIST, and leave it as it was.
func TestCreateNewCollides(t *testing.T) {
	dir := t.TempDir()
	fd := dirHandle(t, dir)
	create(t, fd, "a.txt", "one")
	if err := Mkdir(fd, "sub", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Link(fd, "a.txt", fd, "hard.txt"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a.txt", "A.TXT", "sub", "SUB", "hard.txt"} {
		_, err := Open(fd, name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		wantErr(t, "create-new over "+name, err, syscall.EEXIST)
		wantErr(t, "mkdir over "+name, Mkdir(fd, name, 0o700), syscall.EEXIST)
	}
	if got := content(t, dir, "a.txt"); got != "one" {
		t.Fatalf("a.txt changed: %q", got)
	}
	if st, err := os.Lstat(filepath.Join(dir, "sub")); err != nil || !st.IsDir() {
		t.Fatalf("sub: %v %v", st, err)
	}
	// O_CREATE without O_EXCL opens the existing file and keeps its bytes.
	f2, err := Open(fd, "a.txt", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	Close(f2)
	if got := content(t, dir, "a.txt"); got != "one" {
		t.Fatalf("O_CREATE changed a.txt: %q", got)
	}
	// O_TRUNC truncates; O_APPEND appends.
	f3, err := Open(fd, "a.txt", os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	Write(f3, []byte("two"))
	Close(f3)
	f4, err := Open(fd, "a.txt", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	Write(f4, []byte("+3"))
	Close(f4)
	if got := content(t, dir, "a.txt"); got != "two+3" {
		t.Fatalf("after O_TRUNC and O_APPEND: %q, want two+3", got)
	}
}

// TestOpenRelative: names are resolved beneath the directory handle and
// nowhere else: ".." never climbs out, a stream name is refused, the type
// is enforced at the open, and the handle stays bound to its directory
// when the directory is renamed.
func TestOpenRelative(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fd := dirHandle(t, dir)
	create(t, fd, "f", "file")
	if err := Mkdir(fd, "sub", 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"..", `..\escape`, "../escape", `sub\..\..\escape`, `sub\..\f`, `.\f`} {
		if nfd, err := Open(fd, name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err != syscall.EINVAL {
			if err == nil {
				Close(nfd)
			}
			t.Errorf("create-new %q: %v, want EINVAL", name, err)
		}
		if nfd, err := OpenDir(fd, name); err != syscall.EINVAL {
			if err == nil {
				Close(nfd)
			}
			t.Errorf("OpenDir %q: %v, want EINVAL", name, err)
		}
	}
	for _, name := range []string{"f:stream", "f::$DATA", "new:stream"} {
		if nfd, err := Open(fd, name, os.O_CREATE|os.O_RDWR, 0o600); err != syscall.EINVAL {
			if err == nil {
				Close(nfd)
			}
			t.Errorf("open %q: %v, want EINVAL (an alternate data stream)", name, err)
		}
	}
	if got := names(t, parent); !slices.Equal(got, []string{"d"}) {
		t.Fatalf("something was made beside the directory: %q", got)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"f", "sub"}) {
		t.Fatalf("the directory holds %q, want [f sub]", got)
	}

	_, err := OpenDir(fd, "f")
	wantErr(t, "OpenDir on a file", err, syscall.ENOTDIR)
	_, err = Open(fd, "sub", os.O_RDONLY, 0)
	wantErr(t, "Open on a directory", err, syscall.EISDIR)
	_, err = Open(fd, "missing", os.O_RDONLY, 0)
	wantErr(t, "Open of a missing name", err, syscall.ENOENT)
	_, err = Open(fd, `missing\x`, os.O_RDONLY, 0)
	wantErr(t, "Open beneath a missing directory", err, syscall.ENOENT)
	_, err = Lstat(fd, "missing")
	wantErr(t, "Lstat of a missing name", err, syscall.ENOENT)

	// "." is the directory itself.
	self, err := OpenDir(fd, ".")
	if err != nil {
		t.Fatal(err)
	}
	defer Close(self)
	a, _ := Fstat(fd)
	b, err := Fstat(self)
	if err != nil || a.Dev != b.Dev || a.Ino != b.Ino || !b.Mode.IsDir() {
		t.Fatalf(`OpenDir(".") is another object: %+v vs %+v (%v)`, a, b, err)
	}

	// Nested names and a handle to a subdirectory.
	sub, err := OpenDir(fd, "sub")
	if err != nil {
		t.Fatal(err)
	}
	defer Close(sub)
	create(t, sub, "inner", "in")
	if got := content(t, dir, `sub\inner`); got != "in" {
		t.Fatalf("sub/inner: %q", got)
	}
	nested, err := Open(fd, "sub/inner", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	Close(nested)
	deep, err := OpenDirNoSymlinks(fd, "sub")
	if err != nil {
		t.Fatal(err)
	}
	defer Close(deep)
	c, _ := Fstat(sub)
	d, _ := Fstat(deep)
	if c.Ino != d.Ino {
		t.Fatalf("OpenDirNoSymlinks(sub) is another directory than OpenDir(sub)")
	}
	abs, err := OpenDirNoSymlinks(AtCWD, filepath.Join(dir, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	defer Close(abs)
	if e, _ := Fstat(abs); e.Ino != c.Ino {
		t.Fatalf("OpenDirNoSymlinks(absolute) is another directory than OpenDir(sub)")
	}
	for _, p := range []string{`\\?\` + dir, `\\.\` + dir, `\??\` + dir, dir[:2] + "relative", `\rooted`} {
		if nfd, err := OpenDirNoSymlinks(AtCWD, p); err != syscall.EINVAL {
			if err == nil {
				Close(nfd)
			}
			t.Errorf("OpenDirNoSymlinks(%q): %v, want EINVAL", p, err)
		}
	}

	// The handle is bound to the directory, not its path.
	if err := os.Rename(dir, filepath.Join(parent, "moved")); err != nil {
		t.Fatal(err)
	}
	create(t, fd, "after", "a")
	if got := content(t, filepath.Join(parent, "moved"), "after"); got != "a" {
		t.Fatalf("created through the handle after its directory moved: %q", got)
	}
}

// TestIdentityAndLinkCount: the identity, link count, size and times come
// from the handle, agree with Lstat and with Go's own os.Stat, tell two
// files apart, and count hard links.
func TestIdentityAndLinkCount(t *testing.T) {
	dir := t.TempDir()
	fd := dirHandle(t, dir)
	create(t, fd, "a", "hello")
	create(t, fd, "b", "other")
	af, err := Open(fd, "a", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(af)
	st, err := Fstat(af)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Mode.IsRegular() || st.Nlink != 1 || st.Size != 5 || st.Ino == 0 || st.Dev == 0 {
		t.Fatalf("Fstat(a) = %+v", st)
	}
	ls, err := Lstat(fd, "a")
	if err != nil {
		t.Fatal(err)
	}
	if ls.Dev != st.Dev || ls.Ino != st.Ino || ls.Nlink != 1 || ls.Size != 5 {
		t.Fatalf("Lstat(a) = %+v, Fstat = %+v", ls, st)
	}
	oi, err := os.Stat(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	if st.MtimeNs != oi.ModTime().UnixNano() || st.Size != oi.Size() {
		t.Fatalf("mtime %d size %d, os.Stat says %d %d", st.MtimeNs, st.Size, oi.ModTime().UnixNano(), oi.Size())
	}
	bs, _ := Lstat(fd, "b")
	if bs.Ino == st.Ino {
		t.Fatalf("a and b have one identity: %d", st.Ino)
	}
	ds, err := Fstat(fd)
	if err != nil || !ds.Mode.IsDir() {
		t.Fatalf("Fstat(dir) = %+v, %v", ds, err)
	}

	if err := Link(fd, "a", fd, "a2"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "Link onto an existing name", Link(fd, "a", fd, "b"), syscall.EEXIST)
	for _, name := range []string{"a", "a2"} {
		s, err := Lstat(fd, name)
		if err != nil || s.Nlink != 2 || s.Ino != st.Ino {
			t.Fatalf("%s after the link: %+v, %v; want nlink 2, ino %d", name, s, err, st.Ino)
		}
	}
	if s, _ := Fstat(af); s.Nlink != 2 {
		t.Fatalf("Fstat of the open handle after the link: nlink %d, want 2", s.Nlink)
	}
	// With no handle open on the file, even the legacy delete (Wine, FAT)
	// is done when Unlink returns.
	Close(af)
	if err := Unlink(fd, "a2"); err != nil {
		t.Fatal(err)
	}
	if s, err := Lstat(fd, "a"); err != nil || s.Nlink != 1 {
		t.Fatalf("after unlinking the link: %+v, %v; want nlink 1", s, err)
	}
	af, err = Open(fd, "a", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(af)

	// Pread reads at an offset, leaves the position, and returns 0 at EOF.
	buf := make([]byte, 3)
	if n, err := Pread(af, buf, 2); err != nil || string(buf[:n]) != "llo" {
		t.Fatalf("Pread(2) = %q, %v", buf[:n], err)
	}
	if n, err := Pread(af, buf, 5); n != 0 || err != nil {
		t.Fatalf("Pread at EOF = %d, %v", n, err)
	}
	rw, err := Open(fd, "b", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(rw)
	Pread(rw, buf, 3)
	if err := Write(rw, []byte("OT")); err != nil {
		t.Fatal(err)
	}
	if err := Ftruncate(rw, 4); err != nil {
		t.Fatal(err)
	}
	if err := Fsync(rw); err != nil {
		t.Fatalf("Fsync(file): %v", err)
	}
	if err := Fsync(fd); err != nil {
		t.Fatalf("Fsync(dir): %v", err)
	}
	if got := content(t, dir, "b"); got != "OThe" {
		t.Fatalf("b = %q, want OThe (did Pread move the position?)", got)
	}
	dupfd, err := Dup(rw)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := Fstat(dupfd); err != nil || s.Ino != bs.Ino {
		t.Fatalf("Fstat(Dup) = %+v, %v", s, err)
	}
	Close(dupfd)
}

// TestRenameNoReplace: RenameNoReplace and RenameOpen never replace
// (EEXIST, both objects untouched); they move the object itself (its
// identity kept); RenameOpen moves the object its handle is open on even
// after its name was given to another object.
func TestRenameNoReplace(t *testing.T) {
	dir := t.TempDir()
	fd := dirHandle(t, dir)
	create(t, fd, "a", "A")
	create(t, fd, "b", "B")
	Mkdir(fd, "d1", 0o700)
	Mkdir(fd, "d2", 0o700)
	wantErr(t, "RenameNoReplace onto a file", RenameNoReplace(fd, "a", fd, "b"), syscall.EEXIST)
	wantErr(t, "RenameNoReplace onto another spelling", RenameNoReplace(fd, "a", fd, "B"), syscall.EEXIST)
	wantErr(t, "RenameNoReplace of a directory onto a directory", RenameNoReplace(fd, "d1", fd, "d2"), syscall.EEXIST)
	wantErr(t, "RenameNoReplace onto a directory", RenameNoReplace(fd, "a", fd, "d1"), syscall.EEXIST)
	if content(t, dir, "a") != "A" || content(t, dir, "b") != "B" {
		t.Fatal("a refused rename changed a file")
	}
	wantErr(t, "RenameNoReplace of a missing name", RenameNoReplace(fd, "missing", fd, "c"), syscall.ENOENT)

	before, _ := Lstat(fd, "a")
	if err := RenameNoReplace(fd, "a", fd, "c"); err != nil {
		t.Fatal(err)
	}
	after, err := Lstat(fd, "c")
	if err != nil || after.Ino != before.Ino {
		t.Fatalf("c after the rename: %+v, %v; want ino %d", after, err, before.Ino)
	}
	if _, err := Lstat(fd, "a"); err != syscall.ENOENT {
		t.Fatalf("a is still there after the rename: %v", err)
	}
	d1, _ := OpenDir(fd, "d1")
	defer Close(d1)
	if err := RenameNoReplace(fd, "c", d1, "c"); err != nil {
		t.Fatalf("rename into another directory: %v", err)
	}
	if content(t, dir, `d1\c`) != "A" {
		t.Fatal("d1/c does not hold A")
	}

	// The plain rename replaces.
	create(t, fd, "x", "X")
	if err := Rename(fd, "x", fd, "b"); err != nil {
		t.Fatal(err)
	}
	if content(t, dir, "b") != "X" {
		t.Fatal("Rename did not replace b")
	}

	// RenameOpen moves the object of its handle, and never replaces.
	create(t, fd, "f", "original")
	hd, err := OpenHandle(fd, "f", HowDelete|HowNonDir)
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, "RenameOpen onto an existing name", RenameOpen(hd, fd, "b"), syscall.EEXIST)
	if err := RenameOpen(hd, d1, "moved"); err != nil {
		t.Fatal(err)
	}
	// os.ReadFile does not share delete: it cannot open the file while a
	// handle with DELETE access is open.
	Close(hd)
	if content(t, dir, `d1\moved`) != "original" || content(t, dir, "b") != "X" {
		t.Fatal("RenameOpen moved the wrong object")
	}
	if _, err := Lstat(fd, "f"); err != syscall.ENOENT {
		t.Fatalf("f after RenameOpen: %v, want ENOENT", err)
	}
}

// TestDeleteByHandle: DeleteOpen deletes the object its handle is open on,
// never what its name holds later: a successor made at the name after the
// object was moved away stays. Unlink and Rmdir enforce the type and
// refuse a non-empty directory.
func TestDeleteByHandle(t *testing.T) {
	dir := t.TempDir()
	fd := dirHandle(t, dir)
	create(t, fd, "f", "original")
	hd, err := OpenHandle(fd, "f", HowDelete|HowNonDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := DeleteOpen(hd); err != nil {
		t.Fatal(err)
	}
	Close(hd)
	if _, err := Lstat(fd, "f"); err != syscall.ENOENT {
		t.Fatalf("f after DeleteOpen and Close: %v, want ENOENT", err)
	}

	create(t, fd, "f", "original")
	hd, err = OpenHandle(fd, "f", HowDelete|HowNonDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "f"), filepath.Join(dir, "g")); err != nil {
		t.Fatal(err)
	}
	create(t, fd, "f", "successor")
	if err := DeleteOpen(hd); err != nil {
		t.Fatal(err)
	}
	Close(hd)
	if got := content(t, dir, "f"); got != "successor" {
		t.Fatalf("the successor at f: %q", got)
	}

	Mkdir(fd, "empty", 0o700)
	Mkdir(fd, "full", 0o700)
	create(t, fd, `full\x`, "x")
	wantErr(t, "Unlink of a directory", Unlink(fd, "empty"), syscall.EISDIR)
	wantErr(t, "Rmdir of a file", Rmdir(fd, "f"), syscall.ENOTDIR)
	wantErr(t, "Rmdir of a non-empty directory", Rmdir(fd, "full"), syscall.ENOTEMPTY)
	wantErr(t, "Unlink of a missing name", Unlink(fd, "missing"), syscall.ENOENT)
	if content(t, dir, `full\x`) != "x" {
		t.Fatal("the refused Rmdir changed full")
	}
	if err := Rmdir(fd, "empty"); err != nil {
		t.Fatal(err)
	}
	if err := Unlink(fd, "f"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"empty", "f"} {
		if _, err := Lstat(fd, name); err != syscall.ENOENT {
			t.Fatalf("%s after its removal: %v, want ENOENT", name, err)
		}
	}
}

// TestDenyWriteAndProbeNoWriter: a deny-write open fails while a writer is
// open and keeps writers out while it is; ProbeNoWriter sees writers of
// any kind (Go's os package's too) and ignores readers.
func TestDenyWriteAndProbeNoWriter(t *testing.T) {
	dir := t.TempDir()
	fd := dirHandle(t, dir)
	create(t, fd, "f", "data")
	r, err := Open(fd, "f", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(r)
	if err := ProbeNoWriter(r); err != nil {
		t.Fatalf("ProbeNoWriter with only a reader: %v", err)
	}
	w, err := Open(fd, "f", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, "ProbeNoWriter with a writer", ProbeNoWriter(r), ErrWouldBlock)
	_, err = OpenHandle(fd, "f", HowRead|HowDenyWrite)
	wantErr(t, "deny-write open with a writer", err, syscall.EBUSY)
	Close(w)
	of, err := os.OpenFile(filepath.Join(dir, "f"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, "ProbeNoWriter with an os.OpenFile writer", ProbeNoWriter(r), ErrWouldBlock)
	of.Close()
	if err := ProbeNoWriter(r); err != nil {
		t.Fatalf("ProbeNoWriter after the writers closed: %v", err)
	}
	dw, err := OpenHandle(fd, "f", HowRead|HowDenyWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(dw)
	_, err = Open(fd, "f", os.O_RDWR, 0)
	wantErr(t, "open for writing while a deny-write handle is open", err, syscall.EBUSY)
	r2, err := Open(fd, "f", os.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("a reader while a deny-write handle is open: %v", err)
	}
	Close(r2)
}

// TestReadDir: the listing from a handle holds every name once, with its
// type and file id, across several buffers, and leaves the handle usable.
func TestReadDir(t *testing.T) {
	dir := t.TempDir()
	fd := dirHandle(t, dir)
	want := []string{"sub"}
	Mkdir(fd, "sub", 0o700)
	// 250 entries of 344 bytes each (86,000 bytes) overflow the 64 KiB
	// listing buffer, so the listing continues across calls.
	for i := range 250 {
		n := fmt.Sprintf("entry-%03d-%s", i, strings.Repeat("x", 110))
		create(t, fd, n, "")
		want = append(want, n)
	}
	slices.Sort(want)
	for range 2 {
		got, err := ReadDirNames(fd)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("ReadDirNames: %d names, want %d", len(got), len(want))
		}
	}
	ents, err := ReadDirEntries(fd)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		st, err := Lstat(fd, e.Name)
		if err != nil {
			t.Fatal(err)
		}
		if e.FileID != st.Ino || e.Mode.IsDir() != st.Mode.IsDir() || e.Mode&os.ModeSymlink != 0 {
			t.Fatalf("entry %+v, Lstat %+v", e, st)
		}
	}
	if _, err := ReadDirNames(fd); err != nil {
		t.Fatal(err)
	}
}

// TestErrnoMapping: the NT statuses and Win32 errors map to the errno
// values callers compare with; in particular a delete-pending name is
// contention (EBUSY), not "permission denied", and a missing path
// component is ENOENT, not Go's Windows ENOTDIR (ERROR_PATH_NOT_FOUND).
func TestErrnoMapping(t *testing.T) {
	for _, c := range []struct {
		in   error
		want error
	}{
		{statusObjectNameCollision, syscall.EEXIST},
		{statusObjectNameNotFound, syscall.ENOENT},
		{statusObjectPathNotFound, syscall.ENOENT},
		{statusNotADirectory, syscall.ENOTDIR},
		{statusFileIsADirectory, syscall.EISDIR},
		{statusDirectoryNotEmpty, syscall.ENOTEMPTY},
		{statusNotSameDevice, syscall.EXDEV},
		{statusSharingViolation, syscall.EBUSY},
		{statusDeletePending, syscall.EBUSY},
		{statusAccessDenied, syscall.EACCES},
		{statusObjectNameInvalid, syscall.EINVAL},
		{statusNotImplemented, syscall.ENOSYS},
		{statusInvalidInfoClass, syscall.ENOSYS},
		{statusStoppedOnSymlink, syscall.ELOOP},
		{statusDiskFull, syscall.ENOSPC},
		{windows.NTStatus(0xC000009A), windows.ERROR_NO_SYSTEM_RESOURCES}, // INSUFFICIENT_RESOURCES: passed through
		{windows.ERROR_PATH_NOT_FOUND, syscall.ENOENT},
		{windows.ERROR_FILE_EXISTS, syscall.EEXIST},
		{windows.ERROR_SHARING_VIOLATION, syscall.EBUSY},
		{windows.ERROR_ACCESS_DENIED, syscall.EACCES},
		{windows.ERROR_DIR_NOT_EMPTY, syscall.ENOTEMPTY},
		{windows.ERROR_CRC, windows.ERROR_CRC},
	} {
		if got := errnoOf(c.in); got != c.want {
			t.Errorf("errnoOf(%#v) = %#v (%v), want %v", c.in, got, got, c.want)
		}
	}
	if got := ErrnoName(syscall.EBUSY); got != "EBUSY" {
		t.Errorf("ErrnoName(EBUSY) = %q", got)
	}
}

// TestNoWindowsMeaningRefuses: the calls that have no safe Windows meaning
// refuse even with the gate open: Fchown, TryFlock on a directory (LockFileEx refuses directories; TestTryFlockOnFile),
// ProbeUnopened (a deny-all probe conflicts with fd itself), OFDHeld and
// OFDConflict (no F_GETLK); Exchange is ENOSYS (no atomic exchange).
func TestNoWindowsMeaningRefuses(t *testing.T) {
	dir := t.TempDir()
	fd := dirHandle(t, dir)
	create(t, fd, "a", "A")
	create(t, fd, "b", "B")
	f, err := Open(fd, "a", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(f)
	wantErr(t, "Fchown", Fchown(f, 0, 0), ErrUnsupported)
	wantErr(t, "TryFlock", TryFlock(fd), ErrUnsupported)
	wantErr(t, "ProbeUnopened", ProbeUnopened(f), ErrUnsupported)
	if _, _, err := OFDConflict(f, 0, 1); err != ErrUnsupported {
		t.Fatalf("OFDConflict: %v", err)
	}
	if held, known := OFDHeld(f, 0, 1); held || known {
		t.Fatalf("OFDHeld: %v %v, want unknown", held, known)
	}
	wantErr(t, "Exchange", Exchange(fd, "a", fd, "b"), syscall.ENOSYS)
	if content(t, dir, "a") != "A" || content(t, dir, "b") != "B" {
		t.Fatal("a refused call changed a file")
	}
}

// TestFchmodIsTheReadOnlyAttribute: Fchmod keeps the one bit Windows has,
// owner-write, as the read-only attribute (what Go's os.Chmod and libuv's
// chmod do), through a handle without write access too, and Fstat reads
// it back; a directory is left as it is (Windows reads no permission in
// its read-only attribute); before, every Fchmod refused, so
// every write of the root package failed after staging its file.
func TestFchmodIsTheReadOnlyAttribute(t *testing.T) {
	dir := t.TempDir()
	fd := dirHandle(t, dir)
	create(t, fd, "f", "x")
	if err := Mkdir(fd, "d", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := Open(fd, "f", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(f)
	d, err := OpenDir(fd, "d")
	if err != nil {
		t.Fatal(err)
	}
	defer Close(d)
	for _, tc := range []struct {
		fd         int
		name       string
		perm       uint32
		want       os.FileMode
		osReadOnly bool
	}{
		{f, "f", 0o444, 0o444, true},
		{f, "f", 0o600, 0o666, false},
		{f, "f", 0o400, 0o444, true},
		{f, "f", 0o644, 0o666, false},
		{d, "d", 0o555, os.ModeDir | 0o777, false},
		{d, "d", 0o700, os.ModeDir | 0o777, false},
	} {
		if err := Fchmod(tc.fd, tc.perm); err != nil {
			t.Fatalf("Fchmod(%s, %o): %v", tc.name, tc.perm, err)
		}
		st, err := Fstat(tc.fd)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode != tc.want {
			t.Errorf("Fchmod(%s, %o): mode %v, want %v", tc.name, tc.perm, st.Mode, tc.want)
		}
		fi, err := os.Stat(filepath.Join(dir, tc.name))
		if err != nil {
			t.Fatal(err)
		}
		if ro := fi.Mode()&0o200 == 0; ro != tc.osReadOnly {
			t.Errorf("Fchmod(%s, %o): os.Stat says read-only %v, want %v", tc.name, tc.perm, ro, tc.osReadOnly)
		}
	}
	if content(t, dir, "f") != "x" {
		t.Fatal("Fchmod changed the file's bytes")
	}
}

// TestRenameWaitsOutTransientHolders: a replacing Rename waits (up to
// ReplaceWait) for the two refusals that are transient on Windows, and
// then succeeds: a handle that has the target open (a legacy replace,
// as under Wine, refuses with ACCESS_DENIED while one is; with POSIX
// semantics the first try succeeds), and a handle on the source that does
// not share delete (a virus scanner reading the freshly staged file; a
// sharing violation on every Windows). Before, both failed at once (EACCES
// and EBUSY), so a WriteFile failed whenever a scanner looked.
func TestRenameWaitsOutTransientHolders(t *testing.T) {
	dir := t.TempDir()
	fd := dirHandle(t, dir)
	holdFor := func(name string, share uint32, d time.Duration) <-chan struct{} {
		t.Helper()
		p, err := windows.UTF16PtrFromString(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		fh, err := windows.CreateFile(p, windows.GENERIC_READ, share, nil, windows.OPEN_EXISTING, 0, 0)
		if err != nil {
			t.Fatalf("holding %s: %v", name, err)
		}
		done := make(chan struct{})
		go func() {
			time.Sleep(d)
			windows.CloseHandle(fh)
			close(done)
		}()
		return done
	}
	for _, tc := range []struct {
		what, held string
		share      uint32
	}{
		{"a reader of the target", "target", windows.FILE_SHARE_READ | windows.FILE_SHARE_WRITE},
		{"a scanner of the source, not sharing delete", "staged", windows.FILE_SHARE_READ},
	} {
		create(t, fd, "target", "old")
		create(t, fd, "staged", "new")
		done := holdFor(tc.held, tc.share, 150*time.Millisecond)
		if err := Rename(fd, "staged", fd, "target"); err != nil {
			t.Fatalf("Rename with %s for 150 ms: %v", tc.what, err)
		}
		<-done
		if got := content(t, dir, "target"); got != "new" {
			t.Fatalf("%s: target holds %q", tc.what, got)
		}
		if err := Unlink(fd, "target"); err != nil {
			t.Fatal(err)
		}
	}
	// A holder that stays past the wait: EBUSY, nothing renamed.
	defer func(was time.Duration) { ReplaceWait = was }(ReplaceWait)
	ReplaceWait = 100 * time.Millisecond
	create(t, fd, "target", "old")
	create(t, fd, "staged", "new")
	done := holdFor("staged", windows.FILE_SHARE_READ, 400*time.Millisecond)
	wantErr(t, "Rename past the wait", Rename(fd, "staged", fd, "target"), syscall.EBUSY)
	<-done
	if content(t, dir, "target") != "old" || content(t, dir, "staged") != "new" {
		t.Fatal("a Rename that gave up changed something")
	}
}
