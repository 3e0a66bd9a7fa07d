//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseStraceSummary reads strace -c's table with and without the
// errors column, and refuses a file without its total line (an strace that
// died), rather than count zero calls.
func TestParseStraceSummary(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	os.WriteFile(good, []byte(`% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 40.00    0.000400          20        20           fsync
 10.00    0.000100           1        90         3 openat
------ ----------- ----------- --------- --------- ----------------
100.00    0.001000           9       110         3 total
`), 0o600)
	got, err := parseStraceSummary(good)
	if err != nil {
		t.Fatal(err)
	}
	if got["fsync"] != 20 || got["openat"] != 90 || got["total"] != 110 || len(got) != 3 {
		t.Fatalf("parsed %v", got)
	}
	cut := filepath.Join(dir, "cut")
	os.WriteFile(cut, []byte("% time     seconds  usecs/call     calls    errors syscall\n 40.00    0.000400          20        20           fsync\n"), 0o600)
	if _, err := parseStraceSummary(cut); err == nil || !strings.Contains(err.Error(), "no total line") {
		t.Fatalf("a summary without its total: %v", err)
	}
}

// TestParseMixedRejects: a -mixed that is not G+T says what it wants.
func TestParseMixedRejects(t *testing.T) {
	for _, spec := range []string{"2", "2+", "+2", "0+2", "2+0", "a+b", "2+2+2"} {
		if _, err := parseMixed(spec); err == nil || !strings.Contains(err.Error(), "G+T") {
			t.Errorf("parseMixed(%q) = %v, want an error naming G+T", spec, err)
		}
	}
}

// TestGroupIncrements: a group kind's count and hand-off denominator are
// per goroutine (P·G·K), the others' per worker.
func TestGroupIncrements(t *testing.T) {
	b := &bench{total: 800, goroutines: 4}
	if got := b.increments(kindGroupGofrs, 2); got != 800 {
		t.Errorf("group, P=2: %d increments, want 800", got)
	}
	if got := b.perWorker(kindGroupUpdate, 3); got != 66 {
		t.Errorf("group, P=3: %d per goroutine, want 66", got)
	}
	if got := b.increments(kindGofrs, 3); got != 798 {
		t.Errorf("gofrs, P=3: %d increments, want 798", got)
	}
	b.kinds = []string{kindGroupGofrs, kindGroupUpdate, kindGofrs}
	if b.baseline(kindGroupUpdate) != kindGroupGofrs || b.baseline(kindSQLite) != kindGofrs {
		t.Errorf("baselines: group %s, sqlite %s", b.baseline(kindGroupUpdate), b.baseline(kindSQLite))
	}
	if b.baseline(kindRWUpdate) != kindGofrs {
		t.Errorf("read kind without rw-gofrs: baseline %s, want gofrs", b.baseline(kindRWUpdate))
	}
	b.kinds = append(b.kinds, kindRWGofrs, kindRWUpdate)
	if b.baseline(kindRWUpdate) != kindRWGofrs || b.baseline(kindUpdate) != kindGofrs {
		t.Errorf("baselines: rw-update %s, update %s", b.baseline(kindRWUpdate), b.baseline(kindUpdate))
	}
}

// TestSQLiteIncrementer: the sqlite kind's increments through two
// connections (as two workers would) all land, in WAL mode with
// synchronous=FULL, and a step that fails rolls back and leaves the
// transaction lock free for the next one.
func TestSQLiteIncrementer(t *testing.T) {
	db := sqlitePath(filepath.Join(t.TempDir(), "state.json"))
	if err := sqliteSetup(db); err != nil {
		t.Fatal(err)
	}
	a, err := sqliteIncrementer(db)
	if err != nil {
		t.Fatal(err)
	}
	c, err := sqliteIncrementer(db)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		inc := []func(func([]byte) ([]byte, error)) error{a, c}[i%2]
		if _, err := loop(inc, 1, i%2+1, ""); err != nil {
			t.Fatal(err)
		}
	}
	boom := func([]byte) ([]byte, error) { return nil, os.ErrInvalid }
	if err := a(boom); err == nil {
		t.Fatal("a failing step was not reported")
	}
	if _, err := loop(c, 1, 2, ""); err != nil {
		t.Fatalf("after a rolled-back step: %v", err)
	}
	doc, err := sqliteRead(db)
	if err != nil || string(doc) != `{"n":11,"w":2}` {
		t.Fatalf("the row is %q (%v), want 11 increments", doc, err)
	}
}
