package exactfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// CreateWith hands fill the new file's read-write descriptor while the
// file has no name yet, publishes it whole without replacing, and hands
// the same descriptor back; a taken name (a symlink too) is refused
// before anything is created, and a failed fill leaves nothing behind.
func TestCreateWithHandsBackTheDescriptor(t *testing.T) {
	dir := t.TempDir()
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	p := filepath.Join(dir, "rec")
	fill := func(f *os.File) (Identity, error) {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the name exists while the file is being written: %v", err)
		}
		if _, err := f.WriteAt([]byte("whole"), 0); err != nil {
			return Identity{}, err
		}
		_, id, err := CaptureFile(f)
		return id, err
	}
	f, id, err := d.CreateWith("rec", fill)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, _ := os.ReadFile(p); string(b) != "whole" {
		t.Fatalf("published %q", b)
	}
	_, now, err := CaptureFile(f)
	if err != nil || !now.SameInode(id) || now.CtimeNs != id.CtimeNs {
		t.Fatalf("the descriptor handed back: %v %v, want %v", now, err, id)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	if _, err := f.ReadAt(make([]byte, 5), 0); err != nil {
		t.Errorf("the descriptor is not readable: %v", err)
	}
	called := false
	os.Symlink("elsewhere", filepath.Join(dir, "link"))
	for _, name := range []string{"rec", "link"} {
		_, _, err := d.CreateWith(name, func(*os.File) (Identity, error) { called = true; return Identity{}, nil })
		if !errors.Is(err, ErrDestinationExists) || called {
			t.Errorf("%s: %v (fill called: %v), want destination_exists", name, err, called)
		}
	}
	boom := errors.New("boom")
	if _, _, err := d.CreateWith("other", func(*os.File) (Identity, error) { return Identity{}, boom }); !errors.Is(err, boom) {
		t.Errorf("a failed fill: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("left behind: %v", ents)
	}
}
