//go:build unix

package exactfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/exactfs/exactfs/internal/hook"
)

// capDir makes dir/name holding data and opens dir.
func capDir(t *testing.T, name string, data []byte) (string, *Dir) {
	t.Helper()
	dir := t.TempDir()
	putFile(t, filepath.Join(dir, name), data)
	d, err := OpenDir(dir)
	must(t, err)
	t.Cleanup(func() { d.Close() })
	return dir, d
}

// countReads counts the captures that start reading a file's bytes.
func countReads(t *testing.T) *int {
	n := new(int)
	withHook(t, hook.CaptureRead, func(string) { *n++ })
	return n
}

// A file within the cap is captured whole; one above it is refused by its
// fstat, unread, with the sizes in the error.
func TestCaptureWithinRefusesAboveTheCapUnread(t *testing.T) {
	dir, d := capDir(t, "residue", []byte("0123456789"))
	if data, _, err := d.CaptureWithin("residue", 10); err != nil || string(data) != "0123456789" {
		t.Fatalf("CaptureWithin at the cap: %q, %v", data, err)
	}
	sparse(t, filepath.Join(dir, "residue"))
	reads := countReads(t)
	_, _, err := d.CaptureWithin("residue", 1<<20)
	wantCode(t, err, CodeRecordTooLarge)
	if *reads != 0 || !strings.Contains(err.Error(), "17179869184 bytes, more than the 1048576 this capture reads; nothing of it was read") {
		t.Fatalf("reads %d, error %v", *reads, err)
	}
	if _, _, err := d.CaptureWithin("residue", -1); CodeOf(err) != CodeInvalidRequest {
		t.Fatalf("a negative cap: %v", err)
	}
}

// A file that grows past the cap after the fstat, while it is read,
// fails: changed_during_read, no data.
func TestCaptureWithinFileGrownDuringTheRead(t *testing.T) {
	dir, d := capDir(t, "residue", []byte("0123456789"))
	withHook(t, hook.CaptureRead, hook.Once(func(string) { sparse(t, filepath.Join(dir, "residue")) }))
	data, _, err := d.CaptureWithin("residue", 1<<20)
	wantCode(t, err, CodeChangedDuringRead)
	if data != nil || !strings.Contains(err.Error(), "grew past 1048576 bytes") {
		t.Fatalf("data %d bytes, error %v", len(data), err)
	}
}

// RemoveIf with AnySize and MaxSize: a file its caller bounded on an lstat
// and that grew before the capture (to 16 GiB, sparse) is refused unread,
// and the judge is never asked. Fails on the code before MaxSize: the
// capture (CaptureFile) read all of it.
func TestRemoveIfMaxSizeRefusesAGrownFileUnread(t *testing.T) {
	dir, d := capDir(t, "state.json.tmp", []byte("{}"))
	st, err := d.Lstat("state.json.tmp")
	if err != nil || st.Size() != 2 {
		t.Fatalf("the caller's lstat: %v, %v", st, err)
	}
	sparse(t, filepath.Join(dir, "state.json.tmp"))
	reads := countReads(t)
	judged := false
	err = d.RemoveIf("state.json.tmp", Removal{Quarantine: LockQuarantineName, Unguarded: true, AnySize: true, MaxSize: 64 << 20},
		func(Captured) bool { judged = true; return true })
	if *reads != 0 {
		t.Fatalf("the grown file was read (%d captures started)", *reads)
	}
	if judged || !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("judged %v, error %v; want record_too_large, unjudged", judged, err)
	}
	if st, err := os.Stat(filepath.Join(dir, "state.json.tmp")); err != nil || st.Size() != plantSize {
		t.Fatalf("the file must stay: %v, %v", st, err)
	}
}

// After the verdict, the capture again reads no further than the judged
// version: a file grown at Judged (16 GiB, sparse) is refused unread and
// kept. Fails on the code before, whose capture again (Capture) read it
// all.
func TestRemoveIfAnySizeRecaptureHeldToTheJudgedSize(t *testing.T) {
	dir, d := capDir(t, "state.json.tmp", []byte("{}"))
	reads := countReads(t)
	err := d.RemoveIf("state.json.tmp", Removal{Quarantine: LockQuarantineName, Unguarded: true, AnySize: true,
		Judged: func() { sparse(t, filepath.Join(dir, "state.json.tmp")) }},
		func(Captured) bool { return true })
	if *reads != 1 {
		t.Fatalf("%d captures started reading, want 1 (the judged one)", *reads)
	}
	wantCode(t, err, CodeIdentityMismatch)
	if st, err := os.Stat(filepath.Join(dir, "state.json.tmp")); err != nil || st.Size() != plantSize {
		t.Fatalf("the file must stay: %v, %v", st, err)
	}
}
