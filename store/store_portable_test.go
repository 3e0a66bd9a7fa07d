package store

// Store tests that need no POSIX: they run on Unix and on Windows (under
// Wine in CI). The others are in store_test.go and reap_test.go.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
)

func TestListHidesResidue(t *testing.T) {
	s := newStore(t)
	s.Publish("a", nil)
	for _, n := range []string{".a.0b9d2e7c-3d5e-4f7a-8b9c-0d1e2f3a4b5c.staging", exactfs.PlaceholderPrefix + "1-2", StoreRetirePrefix + "x"} {
		os.WriteFile(filepath.Join(s.Path(), n), nil, 0o600)
	}
	names, err := s.List("")
	if err != nil || !slices.Equal(names, []string{"a"}) {
		t.Fatalf("list: %v %v", names, err)
	}
}

func TestFenceReleasedRefusesMutations(t *testing.T) {
	s := newStore(t)
	l, err := s.AcquireFence(context.Background(), "f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquireFence(context.Background(), "g"); CodeOf(err) != exactfs.CodeInvalidRequest {
		t.Fatalf("second fence: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Publish("x", nil); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("publish after the fence was released: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(s.Path(), "x")); !os.IsNotExist(err) {
		t.Fatal("published without a fence")
	}
}

// Thousands of aged remnants in one directory (the reference's scenarios
// 194 and 201) are all drained by one Reap, and a mutation started while
// the reap runs still commits (it waits for the directory's commit lock,
// which the reaper holds while it works in that directory).
func TestReapDrainsThousandsWhileMutating(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 3000 files")
	}
	s := newStore(t)
	const n = 3000
	for i := 0; i < n; i++ {
		name := "." + "r" + strconv.Itoa(i) + "." + exactfs.NewUUID() + exactfs.StagingSuffix
		if err := os.WriteFile(filepath.Join(s.Path(), name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Publish("dest", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	type result struct {
		r   *ReapReport
		err error
	}
	reaped := make(chan result, 1)
	go func() {
		r, err := s.Reap(ReapMinAge(0))
		reaped <- result{r, err}
	}()
	start := time.Now()
	_, err := s.Replace("dest", []byte("v2"))
	t.Logf("Replace during the reap of %d remnants: %v after %v", n, err, time.Since(start))
	if err != nil {
		t.Fatalf("Replace during the reap: %v", err)
	}
	res := <-reaped
	if res.err != nil {
		t.Fatal(res.err)
	}
	// The Replace's own staging file may have been seen in flight: kept,
	// because its writer had it open (and gone since, by its commit).
	for _, k := range res.r.Kept {
		if dest, ok := exactfs.StagingTarget(k.Path); !ok || dest != "dest" || !strings.Contains(k.Reason, "open") {
			t.Fatalf("the reap kept %s: %s", k.Path, k.Reason)
		}
	}
	if len(res.r.Removed) != n {
		t.Fatalf("one reap removed %d of %d remnants", len(res.r.Removed), n)
	}
	if got, err := os.ReadFile(filepath.Join(s.Path(), "dest")); err != nil || string(got) != "v2" {
		t.Fatalf("dest = %q, %v", got, err)
	}
	for _, e := range entries(t, s.Path()) {
		// The commit lock's file (Windows: exactfs.DirLockName) is
		// private but not residue: it stays.
		if isPrivateName(filepath.Base(e)) && e != exactfs.DirLockName {
			t.Fatalf("left after the reap: %s", e)
		}
	}
}
