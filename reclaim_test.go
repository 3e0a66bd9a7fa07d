//go:build unix

package exactfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// RemoveIf shows the judge one capture and removes only on its word, and
// only the judged version: a successor planted in the window before the
// unlink survives, byte- and inode-identical.
func TestRemoveIf(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r")
	if err := os.WriteFile(p, []byte(`{"pid":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	q := func() string { return LockQuarantineName() }

	var seen []byte
	if err := d.RemoveIf("r", Removal{Quarantine: q}, func(c Captured) bool { seen = c.Data; return false }); err != nil {
		t.Fatal(err)
	}
	if string(seen) != `{"pid":1}` {
		t.Fatalf("judge saw %q", seen)
	}
	if _, err := os.Lstat(p); err != nil {
		t.Fatalf("a file the judge kept was removed: %v", err)
	}

	var succ uint64
	err = d.RemoveIf("r", Removal{Quarantine: q, Judged: func() {
		os.Remove(p)
		if err := os.WriteFile(p, []byte(`{"pid":2}`), 0o600); err != nil {
			t.Error(err)
		}
		id, _ := d.IdentityOf("r")
		succ = id.Ino
	}}, func(Captured) bool { return true })
	if !errors.Is(err, ErrIdentityMismatch) {
		t.Fatalf("removal after a successor took the name: %v, want identity_mismatch", err)
	}
	if b, _ := os.ReadFile(p); string(b) != `{"pid":2}` {
		t.Fatalf("the successor was touched: %q", b)
	}
	if id, _ := d.IdentityOf("r"); id.Ino != succ {
		t.Fatal("the successor's inode changed")
	}

	if err := d.RemoveIf("r", Removal{Quarantine: q}, func(Captured) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a condemned file is still there: %v", err)
	}
}
