//go:build unix

package exactfs

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

func TestRenameAndLinkNoReplace(t *testing.T) {
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
	putFile(t, a, []byte("a"))
	putFile(t, b, []byte("b"))
	ia, ib := inode(t, a), inode(t, b)

	com, err := RenameNoReplace(a, b)
	wantCode(t, err, CodeDestinationExists)
	if com != NotCommitted {
		t.Fatalf("rename over an existing name: %v", com)
	}
	com, err = LinkNoReplace(a, b)
	wantCode(t, err, CodeDestinationExists)
	if com != NotCommitted {
		t.Fatalf("link over an existing name: %v", com)
	}
	wantFile(t, a, []byte("a"), ia)
	wantFile(t, b, []byte("b"), ib)

	com, err = RenameNoReplace(filepath.Join(dir, "missing"), c)
	wantCode(t, err, CodeNotFound)
	if com != NotCommitted {
		t.Fatal(com)
	}

	if com, err = RenameNoReplace(a, c); err != nil || com != Committed {
		t.Fatalf("rename: %v %v", com, err)
	}
	wantAbsent(t, a)
	wantFile(t, c, []byte("a"), ia)
	if com, err = LinkNoReplace(c, a); err != nil || com != Committed {
		t.Fatalf("link: %v %v", com, err)
	}
	wantFile(t, a, []byte("a"), ia)

	// A symlink is renamed or linked as itself, never followed.
	l := filepath.Join(dir, "l")
	must(t, os.Symlink("b", l))
	if _, err := LinkNoReplace(l, filepath.Join(dir, "l2")); err != nil {
		t.Fatal(err)
	}
	if st := lstatT(t, filepath.Join(dir, "l2")); st.Mode&syscall.S_IFMT != syscall.S_IFLNK {
		t.Fatal("link followed the symlink")
	}
	if _, err := RenameNoReplace(l, filepath.Join(dir, "l3")); err != nil {
		t.Fatal(err)
	}
	if st := lstatT(t, filepath.Join(dir, "l3")); st.Mode&syscall.S_IFMT != syscall.S_IFLNK {
		t.Fatal("rename followed the symlink")
	}
	wantFile(t, b, []byte("b"), ib)

	// Through a Dir, names stay beneath it.
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.RenameNoReplace("c", "d"); err != nil {
		t.Fatal(err)
	}
	_, err = d.RenameNoReplace("d", "/etc/x")
	wantCode(t, err, CodeInvalidRequest)
	_, err = d.LinkNoReplace("d", "../x")
	wantCode(t, err, CodeInvalidRequest)
}

func TestDirHelpers(t *testing.T) {
	dir := t.TempDir()
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	if err := Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if st := lstatT(t, filepath.Join(dir, "sub")); st.Mode&0o7777 != 0o755 {
		t.Fatalf("Mkdir under umask 077: mode %o, want 755", st.Mode&0o7777)
	}
	wantCode(t, Mkdir(filepath.Join(dir, "sub"), 0o700), CodeDestinationExists)

	d, err := OpenDir(filepath.Join(dir, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	id, err := d.Stat()
	if err != nil || !id.Mode.IsDir() {
		t.Fatalf("Stat: %v %v", id, err)
	}
	if dev, ino := d.Inode(); dev != id.Dev || ino != id.Ino {
		t.Fatal("Inode and Stat disagree")
	}
	must(t, d.Mkdir("inner", 0o700))
	if _, err := d.Publish("f", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	names, err := d.ReadDirNames()
	slices.Sort(names)
	if err != nil || !slices.Equal(names, []string{"f", "inner"}) {
		t.Fatalf("ReadDirNames: %q %v", names, err)
	}
	fi, err := d.Lstat("f")
	if err != nil || fi.Size() != 1 || !fi.Mode().IsRegular() || fi.Sys().(Identity).Ino != inode(t, filepath.Join(dir, "sub", "f")) {
		t.Fatalf("Lstat: %v %v", fi, err)
	}
	f, err := d.OpenFile("f", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	inner, err := d.OpenDir("inner")
	if err != nil {
		t.Fatal(err)
	}
	if inner.Name() != filepath.Join(dir, "sub", "inner") {
		t.Fatalf("Name %q", inner.Name())
	}
	inner.Close()
	wantCode(t, d.Rmdir("f"), CodeNotDirectory)
	must(t, d.Rmdir("inner"))
	wantCode(t, Rmdir(filepath.Join(dir, "sub")), CodeDestinationExists) // not empty
	wantFile(t, filepath.Join(dir, "sub", "f"), []byte("x"), 0)
}
