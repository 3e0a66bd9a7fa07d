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
// CaptureTree captures it; a tree holding a file over the size limit, an
// entry deeper than the depth limit, or more entries than the limit, is
// refused with record_too_large before a byte of any file is read (hook
// CaptureRead never fires); and the capture walk itself holds to the
// limits.
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
	// Deeper than the limit is refused too, whatever lies there (it used
	// to be left to the capture, which then hashed it all: a planted
	// gigabyte below the depth limit was read).
	mk("deep/1/2/3/4/huge", 17)
	mk("deep2/1/2/3/small", 1)
	for _, name := range []string{"deep", "deep2"} {
		if _, err := d.CaptureTreeWithin(name, TreeLimits{Entries: 8, Depth: 2, FileSize: 16}); !errors.Is(err, ErrRecordTooLarge) {
			t.Errorf("CaptureTreeWithin(%s) below the depth limit = %v, want record_too_large", name, err)
		}
	}
	restore()

	// The capture holds to the limits on its own, so a tree that grows
	// between the look and the capture costs no more: the walk refuses
	// what the look would have refused (the look is skipped here).
	for _, name := range []string{"big", "many", "deep", "deep2"} {
		l := TreeLimits{Entries: 8, Depth: 2, FileSize: 16}
		var read []string
		restore := hook.Set(hook.CaptureRead, func(p string) { read = append(read, p) })
		err := d.Use(func(fd int) error {
			_, err := captureTreeAt("capture tree", name, fd, name, &l, nil)
			return err
		})
		restore()
		if !errors.Is(err, ErrRecordTooLarge) {
			t.Errorf("the capture walk of %s within %+v = %v, want record_too_large", name, l, err)
		}
		for _, p := range read {
			if filepath.Base(p) == "huge" {
				t.Errorf("the capture walk of %s read %s, a file over the limit", name, p)
			}
		}
	}
}
