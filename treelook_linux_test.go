//go:build linux

package exactfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/exactfs/exactfs/internal/hook"
)

// TestCaptureTreeWithin: a tree within the limits is captured as
// CaptureTree captures it; a tree holding a file over the size limit, at
// any depth the look reaches, or more entries than the limit, is refused
// with record_too_large before a byte of any file is read (hook
// CaptureRead never fires).
func TestCaptureTreeWithin(t *testing.T) {
	base := t.TempDir()
	d := openDirT(t, base)
	lim := TreeLimits{Entries: 8, Depth: 3, FileSize: 16}
	mk := func(rel string, size int) {
		p := filepath.Join(base, rel)
		os.MkdirAll(filepath.Dir(p), 0o700)
		putFile(t, p, make([]byte, size))
	}

	mk("ok/a", 16)
	mk("ok/sub/b", 3)
	got, err := d.CaptureTreeWithin("ok", lim)
	if err != nil {
		t.Fatal(err)
	}
	want, err := d.CaptureTree("ok")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Entries) != fmt.Sprint(want.Entries) {
		t.Fatalf("CaptureTreeWithin = %v, want %v", got.Entries, want.Entries)
	}

	mk("big/x/y/huge", 17)
	for i := range 8 {
		mk(fmt.Sprintf("many/f%d", i), 1)
	}
	restore := hook.Set(hook.CaptureRead, func(p string) { t.Errorf("read %s", p) })
	for _, name := range []string{"big", "many"} {
		if _, err := d.CaptureTreeWithin(name, lim); !errors.Is(err, ErrRecordTooLarge) {
			t.Errorf("CaptureTreeWithin(%s) = %v, want record_too_large", name, err)
		}
	}
	restore()
	// Below the depth limit nothing is looked at: the capture decides.
	mk("deep/1/2/3/4/huge", 17)
	if _, err := d.CaptureTreeWithin("deep", TreeLimits{Entries: 8, Depth: 2, FileSize: 16}); errors.Is(err, ErrRecordTooLarge) {
		t.Errorf("a file below the depth limit was looked at: %v", err)
	}
}
