package exactfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestSmoke(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.json")
	id, err := Publish(p, []byte("one"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Publish(p, []byte("two"), 0o644); !errors.Is(err, ErrDestinationExists) {
		t.Fatalf("publish over existing: %v", err)
	}
	data, id2, err := Capture(p)
	if err != nil || string(data) != "one" || !id.SameContent(id2) {
		t.Fatalf("capture: %q %v %v", data, err, id.diff(id2))
	}
	id3, err := ReplaceExpected(p, []byte("three"), id2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReplaceExpected(p, []byte("four"), id2); !errors.Is(err, ErrIdentityMismatch) {
		t.Fatalf("stale CAS: %v", err)
	}
	if err := UnlinkExact(p, id2, "q1"); !errors.Is(err, ErrIdentityMismatch) {
		t.Fatalf("stale unlink: %v", err)
	}
	if err := UnlinkExact(p, id3, "q2"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Fatal("still there", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		t.Fatalf("residue: %v", ents)
	}
	if _, err := WriteFile(p, []byte("w"), 0o640); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o640 {
		t.Fatal(fi.Mode())
	}
	os.Symlink(p, filepath.Join(dir, "link"))
	if _, _, err := Capture(filepath.Join(dir, "link")); !errors.Is(err, ErrReparsePoint) {
		t.Fatalf("symlink: %v", err)
	}
	syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600)
	start := time.Now()
	if _, _, err := Capture(filepath.Join(dir, "fifo")); !errors.Is(err, ErrNotRegularFile) {
		t.Fatalf("fifo: %v", err)
	}
	t.Log(time.Since(start))
	os.MkdirAll(filepath.Join(dir, "t/x/y"), 0o700)
	os.WriteFile(filepath.Join(dir, "t/x/f"), []byte("f"), 0o600)
	os.WriteFile(filepath.Join(dir, "t/x-c"), []byte("g"), 0o600)
	tr, err := CaptureTree(filepath.Join(dir, "t"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tr.Entries {
		t.Log(e.Path, e.Identity.Mode)
	}
	if err := RemoveTreeExact(filepath.Join(dir, "t"), tr); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "t")); !os.IsNotExist(err) {
		t.Fatal("tree still there")
	}
	os.Symlink(dir, filepath.Join(dir, "dlink"))
	if _, _, err := Capture(filepath.Join(dir, "dlink", "a.json")); !errors.Is(err, ErrReparsePoint) {
		t.Fatalf("symlinked dir: %v", err)
	}
	t.Log(err)
}
