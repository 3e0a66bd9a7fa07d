//go:build linux && !exactfs_portable

package exactfs

import (
	"os"
	"path/filepath"
	"strings"
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
	if why, err := ProbeUnopened(f); why != "" || err != nil {
		t.Fatalf("a file only we have open: %q, %v", why, err)
	}
	g, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if why, err := ProbeUnopened(f); why == "" || err != nil {
		t.Fatalf("a file opened twice: %q, %v", why, err)
	}
	g.Close()
	if why, err := ProbeUnopened(f); why != "" || err != nil {
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
	if why, err := ProbeNoWriter(f); why != "" || err != nil {
		t.Fatalf("a file open only for reading: %q, %v", why, err)
	}
	w, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if why, err := ProbeNoWriter(f); why == "" || err != nil {
		t.Fatalf("a file open for writing: %q, %v", why, err)
	}
	w.Close()
	if why, err := ProbeNoWriter(f); why != "" || err != nil {
		t.Fatalf("after the writer closed it: %q, %v", why, err)
	}
}

func TestWriter(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if a, why := ProbeWriter(f); a != AnswerNo || why != "" {
		t.Fatalf("a file open only for reading: %v %q", a, why)
	}
	w, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if a, why := ProbeWriter(f); a != AnswerYes || why == "" {
		t.Fatalf("a file open for writing: %v %q", a, why)
	}
}

// The kernel refuses a lease on anything but a regular file (EINVAL): the
// answer is AnswerUnknown, never AnswerNo. HasWriter, which ProbeWriter
// replaced, answered false here, which its caller read as "nobody is
// writing it".
func TestWriterUnknownWhereTheKernelCannotTell(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close() // a writer exists; the probe cannot see it
	if a, why := ProbeWriter(r); a != AnswerUnknown || !strings.Contains(why, "cannot tell") {
		t.Fatalf("a pipe with a live writer: %v %q, want unknown", a, why)
	}
	if why, err := ProbeNoWriter(r); why == "" || err != nil {
		t.Fatalf("NoWriter on a pipe: %q, %v: must not prove anything", why, err)
	}
}
