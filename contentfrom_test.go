//go:build unix

package exactfs_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/exactfs/exactfs"
)

// pattern is an endless reader of a known byte pattern, so a test can
// stream more than it ever holds.
type pattern struct{ n int64 }

func (p *pattern) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = byte('a' + (p.n+int64(i))%26)
	}
	p.n += int64(len(b))
	return len(b), nil
}

// patternBytes is what pattern gives first, n bytes of it.
func patternBytes(n int) []byte {
	b := make([]byte, n)
	(&pattern{}).Read(b)
	return b
}

// TestContentFromWritesWhatTheReaderGives: each write primitive with
// ContentFrom writes exactly the reader's bytes, and its Identity is the
// one Capture then reports (the SHA-256 taken while streaming is the
// file's).
func TestContentFromWritesWhatTheReaderGives(t *testing.T) {
	dir := t.TempDir()
	want := patternBytes(3<<20 + 17) // not a multiple of the copy's chunk
	check := func(what, path string, id exactfs.Identity, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: the file holds %d bytes (%v), want the reader's %d", what, len(got), err, len(want))
		}
		_, cid, err := exactfs.Capture(path)
		if err != nil {
			t.Fatal(err)
		}
		if !cid.Equal(id) {
			t.Fatalf("%s returned %v, Capture says %v", what, id, cid)
		}
		if sum := sha256.Sum256(want); id.SHA256 != sum {
			t.Fatalf("%s: identity hash %x, the bytes' hash %x", what, id.SHA256, sum)
		}
	}
	path := filepath.Join(dir, "s")
	id, err := exactfs.Publish(path, nil, 0o600, exactfs.ContentFrom(bytes.NewReader(want)))
	check("Publish", path, id, err)
	want = patternBytes(1<<20 + 5)
	id, err = exactfs.WriteFile(path, nil, 0o600, exactfs.ContentFrom(bytes.NewReader(want)))
	check("WriteFile", path, id, err)
	want = patternBytes(5<<20 + 1)
	id, err = exactfs.ReplaceExpected(path, nil, id, exactfs.ContentFrom(bytes.NewReader(want)))
	if exactfs.CodeOf(err) == exactfs.CodeAtomicUnavailable {
		t.Skipf("no exchange rename here: %v", err)
	}
	check("ReplaceExpected", path, id, err)
}

// TestContentFromMemoryBounded: streaming 96 MiB allocates a bounded
// amount, not the size of the content (the CLI's write of a big stdin
// held it all in memory before).
func TestContentFromMemoryBounded(t *testing.T) {
	const size = 96 << 20
	path := filepath.Join(t.TempDir(), "big")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	id, err := exactfs.WriteFile(path, nil, 0o600, exactfs.ContentFrom(io.LimitReader(&pattern{}, size)))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if id.Size != size {
		t.Fatalf("wrote %d bytes, want %d", id.Size, size)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Fatalf("streaming %d MiB allocated %d MiB; want it bounded (at most 8 MiB)", size>>20, alloc>>20)
	}
}

type failingReader struct {
	left int
	err  error
}

func (r *failingReader) Read(b []byte) (int, error) {
	if r.left == 0 {
		return 0, r.err
	}
	n := min(len(b), r.left)
	for i := range b[:n] {
		b[i] = 'x'
	}
	r.left -= n
	return n, nil
}

// TestContentFromReadErrorChangesNothing: a reader that fails midway fails
// the write with io_error, saying how far it got; the file at the name is
// untouched and no staged bytes are left beside it.
func TestContentFromReadErrorChangesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, before, err := exactfs.Capture(path)
	if err != nil {
		t.Fatal(err)
	}
	cause := errors.New("the producer broke")
	writes := map[string]func(r io.Reader) error{
		"WriteFile": func(r io.Reader) error {
			_, err := exactfs.WriteFile(path, nil, 0o600, exactfs.ContentFrom(r))
			return err
		},
		"ReplaceExpected": func(r io.Reader) error {
			_, err := exactfs.ReplaceExpected(path, nil, before, exactfs.ContentFrom(r))
			return err
		},
		"Publish": func(r io.Reader) error {
			_, err := exactfs.Publish(filepath.Join(dir, "new"), nil, 0o600, exactfs.ContentFrom(r))
			return err
		},
	}
	for name, write := range writes {
		err := write(&failingReader{left: 600 << 10, err: cause})
		if name == "ReplaceExpected" && exactfs.CodeOf(err) == exactfs.CodeAtomicUnavailable {
			continue
		}
		if exactfs.CodeOf(err) != exactfs.CodeIOError || !errors.Is(err, cause) {
			t.Errorf("%s with a failing reader: %v, want io_error wrapping the reader's error", name, err)
		}
		if err != nil && !strings.Contains(err.Error(), "after 614400 bytes") {
			t.Errorf("%s: %q does not say how far the copy got", name, err)
		}
	}
	if _, now, err := exactfs.Capture(path); err != nil || !now.Equal(before) {
		t.Fatalf("the file changed after failed writes: %v, %v", now, err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("left beside the file: %v", names)
	}
}

// TestContentFromWithDataRefused: bytes given both ways are refused before
// anything is opened.
func TestContentFromWithDataRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s")
	_, err := exactfs.Publish(path, []byte("x"), 0o600, exactfs.ContentFrom(strings.NewReader("y")))
	if exactfs.CodeOf(err) != exactfs.CodeInvalidRequest {
		t.Fatalf("data and ContentFrom: %v, want invalid_request", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("something was created: %v", ents)
	}
}
