package store

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"testing"

	"github.com/exactfs/exactfs"
)

// wantLeaseLost checks that err reports the lease loss and nothing else as
// its outcome, whatever caused it: a caller that tests for "not found" must
// not be told that about a lease it lost.
func wantLeaseLost(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("%s: %v, want lease lost", what, err)
	}
	for _, other := range []error{exactfs.ErrNotFound, fs.ErrNotExist, exactfs.ErrIO} {
		if errors.Is(err, other) {
			t.Errorf("%s: errors.Is(err, %v) is true for %v", what, other, err)
		}
	}
	if c := exactfs.CodeOf(err); c != CodeLeaseLost {
		t.Errorf("%s: exactfs.CodeOf = %q, want %q", what, c, CodeLeaseLost)
	}
	if c := CodeOf(err); c != CodeLeaseLost {
		t.Errorf("%s: store.CodeOf = %q, want %q", what, c, CodeLeaseLost)
	}
	// The cause stays reachable for people and for errors.As.
	var xe *exactfs.Error
	if !errors.As(err, &xe) || xe.Code != CodeLeaseLost {
		t.Errorf("%s: errors.As(*exactfs.Error) = %+v", what, xe)
	}
}

// A lease whose lock file vanished is lost, and says so: the not_found of
// the capture that found the name empty is the cause, not the outcome.
func TestLeaseLostToVanishedFileIsLeaseLost(t *testing.T) {
	skipUnderWine(t, wineDeletePending)
	dir := locksDir(t)
	l := acquire(t, dir, "job")
	if err := os.Remove(l.Path()); err != nil {
		t.Fatal(err)
	}
	wantLeaseLost(t, "AssertOwned", l.AssertOwned())
	wantLeaseLost(t, "Release", l.Release())
}

// The same through a store's fence: the mutation is refused as lease lost.
func TestFenceLostToVanishedFileIsLeaseLost(t *testing.T) {
	skipUnderWine(t, wineDeletePending)
	s := newStore(t)
	l, err := s.AcquireFence(context.Background(), "migrate")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(l.Path()); err != nil {
		t.Fatal(err)
	}
	_, err = s.Publish("x", []byte("x"))
	wantLeaseLost(t, "Publish", err)
	var e *Error
	if errors.As(err, &e) && e.Committed {
		t.Fatalf("publish refused up front reports committed: %v", err)
	}
}

// A store code without a Detail is named in words, not as an I/O error.
func TestStoreCodeDescribedByName(t *testing.T) {
	err := &Error{Op: "acquire", Path: "locks/job.lock", Code: CodeLeaseBusy}
	if got, want := err.Error(), "acquire locks/job.lock: lease busy (lease_busy)"; got != want {
		t.Fatalf("message %q, want %q", got, want)
	}
	if !errors.Is(err, ErrLeaseBusy) || errors.Is(err, ErrLeaseLost) {
		t.Fatalf("sentinels of %v", err)
	}
}
