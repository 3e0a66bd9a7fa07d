//go:build unix

package store

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
)

// A reap that runs while ReplaceExpected has just exchanged the predecessor
// out to its staging name (nobody has it open; its mtime is old) waits for
// the commit to finish instead of deleting it under the writer.
func TestReapWaitsForCommitInFlight(t *testing.T) {
	s := newStore(t)
	if _, err := s.Publish("f", []byte("old")); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(s.Path(), "f"), old, old)
	_, id, _ := s.ReadExpected("f")
	var rep *ReapReport
	var reapErr error
	reaped := make(chan struct{})
	armed := false
	defer hook.Set(hook.ReplaceChecked, func(string) { armed = true })()
	defer hook.Set(hook.CaptureRead, func(string) {
		if !armed {
			return
		}
		armed = false
		go func() {
			defer close(reaped)
			rep, reapErr = s.Reap(ReapMinAge(0))
		}()
		time.Sleep(100 * time.Millisecond) // the reaper would strike now
	})()
	if _, err := s.ReplaceExpected("f", []byte("new"), id); err != nil {
		t.Fatalf("replace with a reaper running: %v", err)
	}
	select {
	case <-reaped:
	case <-time.After(40 * time.Second):
		t.Fatal("reap did not finish")
	}
	// Had the reaper looked during the commit, it would have found the
	// predecessor under its staging name (and kept or removed it).
	if reapErr != nil || len(rep.Removed) != 0 || len(rep.Kept) != 0 {
		t.Fatalf("reap looked during the commit: %+v %v", rep, reapErr)
	}
	if got := string(readFile(t, filepath.Join(s.Path(), "f"))); got != "new" {
		t.Fatalf("f = %q", got)
	}
	if got := entries(t, s.Path()); len(got) != 1 {
		t.Fatalf("residue: %v", got)
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
		if isPrivateName(filepath.Base(e)) {
			t.Fatalf("left after the reap: %s", e)
		}
	}
}
