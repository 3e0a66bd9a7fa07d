package statelock

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/sys"
	"github.com/exactfs/exactfs/internal/testfs"
)

// requireBirthTime skips (failing in CI, testfs.Require) where the test
// directory's filesystem reports no birth time: there every malformed record
// takes the 30 s rule and the two ages cannot be told apart.
func requireBirthTime(t *testing.T, dir string) {
	t.Helper()
	f, err := os.CreateTemp(dir, "btime")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	var ok bool
	if err := sys.Control(f, func(fd int) (err error) { _, ok, err = sys.BirthTime(fd); return err }); err != nil {
		t.Fatal(err)
	}
	testfs.Require(t, "birth times (statx STATX_BTIME)", ok, "the filesystem of "+dir+" reports no birth time")
}

// TestAbandonedWriteAges: the two ages of SPEC §4.4's abandoned-write rule,
// on records whose times are real (nothing set back by hand), with no
// process holding them open for writing.
//
//   - Created and never written (empty, birth time equal to its mtime), more
//     than a second old: kept (its creator may still be inside its
//     open(O_CREAT)); byte- and inode-identical afterwards, and the error
//     says it is fresh. On 7b17545 it was reclaimed after 1 s.
//   - Torn and written after its birth (an in-place rewrite whose writer
//     died between truncate and write): reclaimed once a second old.
func TestAbandonedWriteAges(t *testing.T) {
	e := newEnv(t)
	requireBirthTime(t, e.dir)

	// Created, never written.
	if err := os.WriteFile(e.lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// Torn after birth, in the sidecar of a claim-less lock of a second
	// state file: created, then written a moment later.
	e2 := newEnv(t)
	if err := os.WriteFile(e2.lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // past the timestamp granularity
	if err := os.WriteFile(e2.lock, []byte(`{"pid":12,"sta`), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)

	before := stateOf(t, e.lock)
	_, err := TryLock(e.state, e.opts()...)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), string(ReasonOwnerRecordFresh)) {
		t.Fatalf("TryLock over an empty record created more than a second ago and never written: %v", err)
	}
	before.assertSame(t, e.lock)

	h, err := TryLock(e2.state, e2.opts()...)
	if err != nil {
		t.Fatalf("TryLock over a torn record written after its birth, a second ago: %v", err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	assertSteadyState(t, e2, true)
}

// TestAbandonedAgeReasons: abandonedAge's three answers, as the reasons
// people read.
func TestAbandonedAgeReasons(t *testing.T) {
	e := newEnv(t)
	requireBirthTime(t, e.dir)
	p := e.dir + "/r"
	os.WriteFile(p, nil, 0o600)
	check := func(want time.Duration) {
		t.Helper()
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		_, id, err := exactfs.CaptureFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if got, why := abandonedAge(f, id); got != want {
			t.Fatalf("abandonedAge = %s (%s), want %s", got, why, want)
		}
	}
	check(abandonedCreateAge)
	time.Sleep(50 * time.Millisecond)
	os.WriteFile(p, []byte("{"), 0o600)
	check(abandonedRewriteAge)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(p, old, old)
	check(abandonedCreateAge)
}
