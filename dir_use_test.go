//go:build unix

package exactfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/exactfs/exactfs/internal/fdtest"
	"github.com/exactfs/exactfs/internal/sys"
)

// Use holds a reference for f's whole run: a Close during f does not close
// the number f works on, even when the kernel would hand that number to
// the next open (fdtest.Grab opens another directory many times). The old
// side door, a bare Fd() with no reference, failed exactly here: after
// Close its number named the other directory.
func TestDirUseHoldsReference(t *testing.T) {
	base := t.TempDir()
	mine, other := filepath.Join(base, "mine"), filepath.Join(base, "other")
	for _, p := range []string{mine, other} {
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	d, err := OpenDir(mine)
	if err != nil {
		t.Fatal(err)
	}
	dev, ino := d.Inode()
	err = d.Use(func(fd int) error {
		if err := d.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		fdtest.Grab(t, other, 8)
		st, err := sys.Fstat(fd)
		if err != nil || st.Dev != dev || st.Ino != ino {
			t.Errorf("inside Use after Close: fstat = %+v, %v; want the Dir's own directory (inode %d)", st, err, ino)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("use: %v", err)
	}
	for what, err := range map[string]error{
		"use":      d.Use(func(int) error { t.Error("f ran after Close"); return nil }),
		"lstatraw": func() error { _, err := d.LstatRaw("x"); return err }(),
		"statraw":  func() error { _, err := d.StatRaw(); return err }(),
	} {
		if !errors.Is(err, os.ErrClosed) || CodeOf(err) != CodeInvalidRequest {
			t.Errorf("%s after Close: %v, want closed (invalid_request)", what, err)
		}
	}
}

// LstatRaw and StatRaw are the lock's per-cycle stats: they report what
// the system calls do (the errno, for errors.Is) and allocate nothing
// beyond what the bare system calls do.
func TestDirRawStats(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("f", filepath.Join(dir, "l")); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if st, err := d.LstatRaw("f"); err != nil || !st.Mode.IsRegular() || st.Size != 3 {
		t.Fatalf("LstatRaw(f) = %+v, %v", st, err)
	}
	if st, err := d.LstatRaw("l"); err != nil || st.Mode&fs.ModeSymlink == 0 {
		t.Fatalf("LstatRaw(l) = %+v, %v; want the symlink itself", st, err)
	}
	if _, err := d.LstatRaw("missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("LstatRaw(missing) = %v, want not exist", err)
	}
	// One name only: a path would be walked by the kernel, through any
	// symlink on the way (ls/. resolves through the symlink ls).
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(dir, "ls")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"ls/.", "sub/../f", "/etc/passwd"} {
		var e *Error
		if _, err := d.LstatRaw(p); !errors.As(err, &e) || e.Code != CodeInvalidRequest {
			t.Errorf("LstatRaw(%q) = %v, want invalid_request (one name, no separator)", p, err)
		}
	}
	dev, ino := d.Inode()
	if st, err := d.StatRaw(); err != nil || st.Dev != dev || st.Ino != ino || uint32(os.Geteuid()) != st.Uid {
		t.Fatalf("StatRaw = %+v, %v", st, err)
	}
	// The bare system call allocates the name's C string; LstatRaw adds
	// nothing to it.
	bare := testing.AllocsPerRun(100, func() { sys.Lstat(d.fd, "f") })
	if n := testing.AllocsPerRun(100, func() { d.LstatRaw("f") }); n > bare {
		t.Errorf("LstatRaw allocates %v per call, the bare lstat %v", n, bare)
	}
	if n := testing.AllocsPerRun(100, func() { d.StatRaw() }); n != 0 {
		t.Errorf("StatRaw allocates %v per call", n)
	}
	var seen int
	if n := testing.AllocsPerRun(100, func() { d.Use(func(fd int) error { seen = fd; return nil }) }); n != 0 {
		t.Errorf("Use allocates %v per call", n)
	}
	_ = seen
}
