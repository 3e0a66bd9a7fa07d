package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/fdtest"
	"github.com/exactfs/exactfs/internal/hook"
)

// A Close that lands between a mutation's first checks and its commit
// makes the mutation fail as closed. Before the store's descriptors were
// reference-counted, the mutation went on through the closed descriptor
// number: EBADF, or, once the kernel had given the number to an unrelated
// directory, an entry created there.
func TestStoreCloseDuringMutationTouchesNothingElse(t *testing.T) {
	s := newStore(t)
	if err := s.Mkdir("sub"); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other")
	if err := os.MkdirAll(filepath.Join(other, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	restore := hook.Set(hook.StoreBeforeCommit, hook.Once(func(string) {
		s.Close()
		fdtest.Grab(t, other, 8)
	}))
	err := s.Mkdir("sub/x")
	restore()
	if !errors.Is(err, os.ErrClosed) {
		t.Fatalf("mkdir raced by Close: %v, want closed", err)
	}
	if _, err := os.Lstat(filepath.Join(other, "sub", "x")); err == nil {
		t.Fatal("the mutation created its entry in an unrelated directory that reused the store's descriptor number")
	}
	if _, err := os.Lstat(filepath.Join(s.Path(), "sub", "x")); err == nil {
		t.Fatal("the mutation went on after Close")
	}
	for what, err := range map[string]error{
		"publish": func() error { _, err := s.Publish("y", []byte("y")); return err }(),
		"read":    func() error { _, _, err := s.ReadExpected("sub"); return err }(),
		"list":    func() error { _, err := s.List(""); return err }(),
		"mkdir":   s.Mkdir("z"),
	} {
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("%s after Close: %v, want closed", what, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

// Run with -race: goroutines publish, read, replace and list while another
// closes the store and opens files elsewhere. Every call works on the
// store's directory or fails as closed (a committed write may report the
// close it met afterwards, with Committed set); none fails with EBADF or
// writes where a reused descriptor number points.
func TestStoreCloseConcurrentWithOperations(t *testing.T) {
	testPlatform(t)
	other := t.TempDir()
	for round := range 10 {
		s, err := Open(filepath.Join(t.TempDir(), "store"), Create())
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
				for i := range 15 {
					name := fmt.Sprintf("f-%d-%d", g, i)
					_, err := s.Publish(name, []byte(name))
					if err == nil {
						var got []byte
						var id exactfs.Identity
						got, id, err = s.ReadExpected(name)
						if err == nil && !bytes.Equal(got, []byte(name)) {
							err = fmt.Errorf("%s holds %q", name, got)
						}
						switch {
						case err != nil:
						case runtime.GOOS == "windows":
							// No exchange on Windows (ReplaceExpected is
							// atomic_unavailable): the replacing write is
							// Replace, under the directory's commit lock.
							_, err = s.Replace(name, []byte(name+"+"))
						default:
							_, err = s.ReplaceExpected(name, []byte(name+"+"), id)
						}
					}
					if err == nil {
						_, err = s.List("")
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
			for range round {
				s.List("")
			}
			s.Close()
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
		ents, _ := os.ReadDir(s.Path())
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), "f-") && e.Name() != exactfs.DirLockName {
				t.Errorf("round %d: the store holds %q", round, e.Name())
			}
		}
	}
	if ents, _ := os.ReadDir(other); len(ents) != 0 {
		t.Fatalf("an unrelated directory holds %v", ents)
	}
}
