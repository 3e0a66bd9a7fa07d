package store

import (
	"context"
	"errors"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
)

// holdCommitLock takes the store directory's commit lock as another store
// writer would (exactfs's Dir.TryLock on its own open of the directory:
// an exclusive flock on Unix, LockFileEx on the directory's lock file on
// Windows) and keeps it until the test ends.
func holdCommitLock(t *testing.T, dir string) {
	t.Helper()
	d, err := exactfs.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := d.TryLock(); !ok || err != nil {
		t.Fatalf("taking the commit lock of %s: %v %v", dir, ok, err)
	}
	t.Cleanup(func() { d.Close() })
}

// Every store call that waits for a directory's commit lock gives up when
// its context is done: it returns an interrupted error matching
// context.Canceled, changes nothing, and leaves no goroutine or descriptor
// behind. Without the context these calls wait out dirLockWait (30 s) and
// the test fails on its 10 s bound.
func TestStoreWaitsHonourContext(t *testing.T) {
	s := newStore(t)
	id, err := s.Publish("f", []byte("one"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.join(".f.0123abcd-4567-4def-89ab-0123456789ab.staging"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	holdCommitLock(t, s.Path())
	calls := []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"ReplaceContext", func(ctx context.Context) error { _, err := s.ReplaceContext(ctx, "f", []byte("two")); return err }},
		{"ReplaceExpectedContext", func(ctx context.Context) error {
			_, err := s.ReplaceExpectedContext(ctx, "f", []byte("two"), id)
			return err
		}},
		{"RemoveExpectedContext", func(ctx context.Context) error { return s.RemoveExpectedContext(ctx, "f", id) }},
		{"ReapContext", func(ctx context.Context) error { _, err := s.ReapContext(ctx, ReapMinAge(0)); return err }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			fds, gs := openFds(t), runtime.NumGoroutine()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- c.run(ctx) }()
			time.Sleep(20 * time.Millisecond) // let it reach the wait
			cancel()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the call did not return within 10s of its context's cancellation")
			}
			switch {
			case c.name == "ReplaceExpectedContext" && runtime.GOOS == "windows":
				// Windows has no rename exchange: ReplaceExpected refuses
				// before it stages anything or waits for the lock.
				if CodeOf(err) != exactfs.CodeAtomicUnavailable {
					t.Fatalf("err = %v, want atomic_unavailable (no exchange on Windows)", err)
				}
			case !errors.Is(err, context.Canceled) || !errors.Is(err, exactfs.ErrInterrupted):
				t.Fatalf("err = %v, want interrupted matching context.Canceled", err)
			}
			data, now, err := s.ReadExpected("f")
			if err != nil || string(data) != "one" || !SameFile(id, now) {
				t.Fatalf("the file changed: %q %v", data, err)
			}
			if _, err := os.Lstat(s.join(".f.0123abcd-4567-4def-89ab-0123456789ab.staging")); err != nil {
				t.Fatalf("the residue was touched: %v", err)
			}
			for end := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > gs || openFds(t) > fds; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(end) {
					t.Fatalf("left behind: goroutines %d (before %d), descriptors %d (before %d)", runtime.NumGoroutine(), gs, openFds(t), fds)
				}
			}
		})
	}
}
