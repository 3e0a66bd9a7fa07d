//go:build unix

package store

import (
	"context"
	"errors"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
)

// holdCommitLock takes the store directory's commit lock as another store
// writer would (an exclusive flock on its own open of the directory) and
// keeps it until the test ends.
func holdCommitLock(t *testing.T, dir string) {
	t.Helper()
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
}

func openFds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd to count descriptors:", err)
	}
	return len(ents)
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
			if !errors.Is(err, context.Canceled) || !errors.Is(err, exactfs.ErrInterrupted) {
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
