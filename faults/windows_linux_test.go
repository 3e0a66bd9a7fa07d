package faults

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/liveness"
	"github.com/exactfs/exactfs/statelock"
)

// EIO reading F.lock is a filesystem error, not contention (the
// reference's scenario 139): the call fails at once naming F.lock and the
// errno, the record is kept, and the lock works once the fault clears.
func TestFaultEIOReadingLockRecord(t *testing.T) {
	e := newEnv(t)
	// A live TypeScript-style record, written beside the layer: this
	// process has no cached view of it, so the lock must read it.
	host, err := liveness.LoadHostIdentity(e.config)
	if err != nil {
		t.Fatal(err)
	}
	before := []byte(fmt.Sprintf(`{"pid":%d,"start_time":"unknown","token":"t","owner_host_id":%q}`, os.Getppid(), host.ID))
	if err := os.WriteFile(filepath.Join(e.f.Backing, "d", "state.json.lock.new"), before, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(e.f.Backing, "d", "state.json.lock.new"), filepath.Join(e.f.Backing, "d", "state.json.lock")); err != nil {
		t.Fatal(err)
	}
	e.f.Fail(Rule{Op: OpRead, Match: named("state.json.lock"), Errno: syscall.EIO})
	_, err = statelock.TryLock(e.state, e.opts()...)
	e.checkError(t, err, syscall.EIO)
	if !strings.Contains(err.Error(), "state.json.lock") {
		t.Errorf("the error does not name F.lock: %v", err)
	}
	after, rerr := os.ReadFile(filepath.Join(e.f.Backing, "d", "state.json.lock"))
	if rerr != nil || string(after) != string(before) {
		t.Fatalf("F.lock changed under the fault: %q -> %q (%v)", before, after, rerr)
	}
	e.checkBytes(t, oldState)
	// The record is a live holder's: once the fault clears, it is
	// contention again, not an error.
	e.f.Clear()
	if _, err := statelock.TryLock(e.state, e.opts()...); !errors.Is(err, statelock.ErrLocked) {
		t.Fatalf("TryLock once the fault cleared: %v, want the live holder's contention", err)
	}
}

// A directory fsync that fails right after an exact tree removal detached
// a dead legacy F.lock/ (the reference's scenarios 21, 66, 255): the call
// fails with durability_failed naming <F.lock>.removing, the state file is
// untouched, and the next Lock finishes the removal.
func TestFaultFsyncAfterTreeDetach(t *testing.T) {
	e := newEnv(t)
	host, err := liveness.LoadHostIdentity(e.config)
	if err != nil {
		t.Fatal(err)
	}
	lock := e.state + ".lock"
	// A legacy directory lock of a dead local owner, where the tombstone
	// was: the shape an older runtime leaves.
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(lock, 0o700); err != nil {
		t.Fatal(err)
	}
	dead := deadPid(t)
	info := fmt.Sprintf(`{"pid":%d,"start_time":"1","timestamp":%d,"owner_host_id":%q}`, dead, time.Now().UnixMilli(), host.ID)
	if err := os.WriteFile(filepath.Join(lock, "info"), []byte(info), 0o600); err != nil {
		t.Fatal(err)
	}
	e.f.Fail(Rule{Op: OpFsyncDir, Match: named("d"), Errno: syscall.EIO, Times: 1})
	_, err = statelock.TryLock(e.state, e.opts()...)
	t.Logf("TryLock under the fault: %v; failed calls %v", err, e.f.Hits())
	if len(e.f.Hits()) == 0 {
		t.Fatalf("the fault never struck: %v", err)
	}
	if err == nil || !errors.Is(err, syscall.EIO) || errors.Is(err, statelock.ErrLocked) {
		t.Fatalf("TryLock with the detach's fsync failing: %v, want an EIO error, not contention", err)
	}
	var fe *exactfs.Error
	found := false
	for cur := err; cur != nil; cur = errors.Unwrap(cur) {
		if errors.As(cur, &fe) && fe.Code == exactfs.CodeDurabilityFailed {
			found = true
			break
		}
	}
	if !found || !strings.Contains(err.Error(), "state.json.lock.removing") {
		t.Fatalf("TryLock: %v, want durability_failed naming the detached lock directory", err)
	}
	e.checkBytes(t, oldState)
	// The detach itself happened; the next call finishes the removal.
	e.checkHeals(t)
	for _, name := range []string{"state.json.lock.removing"} {
		if _, err := os.Lstat(filepath.Join(e.dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there after the next lock: %v", name, err)
		}
	}
}

// deadPid returns the pid of a process that has exited and been reaped.
func deadPid(t *testing.T) int {
	t.Helper()
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	return p.Pid
}
