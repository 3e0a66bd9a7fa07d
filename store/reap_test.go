//go:build unix

package store

import (
	"os"
	"path/filepath"
	"testing"
	"time"

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
