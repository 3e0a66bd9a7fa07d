//go:build unix

package exactfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/exactfs/exactfs/internal/fdtest"
	"github.com/exactfs/exactfs/internal/hook"
)

// A Close that races an operation does not pull the descriptor from under
// it: the operation runs to its end on the directory it was given, even
// when the kernel would have given the number to another open meanwhile,
// and every call after Close fails as closed.
func TestDirCloseDuringOperation(t *testing.T) {
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
	restore := hook.Set(hook.Staged, hook.Once(func(string) {
		if err := d.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		fdtest.Grab(t, other, 8)
	}))
	_, err = d.Publish("x", []byte("data"), 0o600)
	restore()
	if err != nil {
		t.Fatalf("publish raced by Close: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(mine, "x")); err != nil || string(got) != "data" {
		t.Fatalf("mine/x = %q, %v", got, err)
	}
	if got := listing(t, mine); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("mine holds %v", got)
	}
	if got := listing(t, other); len(got) != 0 {
		t.Fatalf("an unrelated directory, opened after Close, holds %v", got)
	}
	for what, err := range map[string]error{
		"capture": func() error { _, _, err := d.Capture("x"); return err }(),
		"opendir": func() error { _, err := d.OpenDir("."); return err }(),
		"publish": func() error { _, err := d.Publish("y", nil, 0o600); return err }(),
		"sync":    d.Sync(),
		"readdir": func() error { _, err := d.ReadDirNames(); return err }(),
		"file":    func() error { _, err := d.File(); return err }(),
	} {
		if !errors.Is(err, os.ErrClosed) || CodeOf(err) != CodeInvalidRequest {
			t.Errorf("%s after Close: %v, want closed (invalid_request)", what, err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

// Run with -race: goroutines publish, capture and list through one Dir
// while another closes it and opens files elsewhere. Every call either
// works on the Dir's own directory or fails as closed; none writes where
// a reused descriptor number points, none fails with EBADF.
func TestDirCloseConcurrentWithOperations(t *testing.T) {
	base := t.TempDir()
	mine, other := filepath.Join(base, "mine"), filepath.Join(base, "other")
	for _, p := range []string{mine, other} {
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 20 {
		d, err := OpenDir(mine)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make(chan error, 1000)
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := range 25 {
					name := fmt.Sprintf("f-%d-%d-%d", round, g, i)
					_, err := d.Publish(name, []byte(name), 0o600)
					if err == nil {
						var got []byte
						got, _, err = d.Capture(name)
						if err == nil && !bytes.Equal(got, []byte(name)) {
							err = fmt.Errorf("%s holds %q", name, got)
						}
					}
					if err == nil {
						_, err = d.ReadDirNames()
					}
					if err != nil && !errors.Is(err, os.ErrClosed) {
						errs <- err
					}
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range round % 5 {
				d.Lstat(".")
			}
			d.Close()
			for range 4 {
				if f, err := os.Open(other); err == nil {
					defer f.Close()
				}
			}
		}()
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("round %d: %v", round, err)
		}
	}
	if got := listing(t, other); len(got) != 0 {
		t.Fatalf("the unrelated directory holds %v", got)
	}
	for _, n := range listing(t, mine) {
		if !strings.HasPrefix(n, "f-") {
			t.Errorf("mine holds %q: residue of an operation cut short", n)
		}
	}
}
