//go:build linux

package idle

import (
	"os"
	"path/filepath"
	"testing"
)

func TestUnopened(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if why, err := Unopened(f); why != "" || err != nil {
		t.Fatalf("a file only we have open: %q, %v", why, err)
	}
	g, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if why, err := Unopened(f); why == "" || err != nil {
		t.Fatalf("a file opened twice: %q, %v", why, err)
	}
	g.Close()
	if why, err := Unopened(f); why != "" || err != nil {
		t.Fatalf("after the other close: %q, %v", why, err)
	}
}

func TestNoWriter(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := os.Open(p) // a reader does not count
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if why, err := NoWriter(f); why != "" || err != nil {
		t.Fatalf("a file open only for reading: %q, %v", why, err)
	}
	w, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if why, err := NoWriter(f); why == "" || err != nil {
		t.Fatalf("a file open for writing: %q, %v", why, err)
	}
	w.Close()
	if why, err := NoWriter(f); why != "" || err != nil {
		t.Fatalf("after the writer closed it: %q, %v", why, err)
	}
}
