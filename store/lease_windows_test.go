package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
)

// The store's leases on Windows (issue 22), under Wine in CI and on real
// Windows: acquire, the fencing check, renewal, release, the fence
// counter, and the takeover of a holder killed with TerminateProcess, at
// once through the kernel attestation (LockFileEx beyond the record) or
// after its expiry through the pid rules.

func readLeaseRecord(t *testing.T, p string) LeaseRecord {
	t.Helper()
	b, err := os.ReadFile(p) // another handle: the record must be readable
	if err != nil {
		t.Fatalf("reading the lease record through another handle: %v", err)
	}
	rec, err := ParseLeaseRecord(b)
	if err != nil {
		t.Fatalf("the lease record %q: %v", b, err)
	}
	return rec
}

// TestWindowsLeaseCycle: a lease is taken (its record claims the kernel
// attestation, readable through any other handle), kept from a second
// acquirer, asserted, renewed, released (released:true, written through
// the held handle) and taken again with the next fence: the fence counter
// is replaced without a rename exchange, which Windows lacks (on the old
// code the second acquisition failed with atomic_unavailable).
func TestWindowsLeaseCycle(t *testing.T) {
	winOpenGate(t)
	ctx := context.Background()
	locks := filepath.Join(t.TempDir(), "locks")
	quick := []LeaseOption{WaitBudget(150 * time.Millisecond), PollInterval(20 * time.Millisecond)}

	l, err := AcquireLease(ctx, locks, "job", CreateLocksDir(), HeartbeatInterval(50*time.Millisecond), LeaseDuration(2*time.Second))
	if err != nil {
		t.Fatalf("AcquireLease: %v", err)
	}
	rec := readLeaseRecord(t, l.Path())
	if !rec.KernelLock || rec.Dev == 0 && rec.Ino == 0 {
		t.Errorf("the record does not claim the kernel attestation: %+v", rec)
	}
	if rec.Pid != os.Getpid() || rec.Fence != 1 {
		t.Errorf("record pid %d fence %d, want %d and 1", rec.Pid, rec.Fence, os.Getpid())
	}
	_, err = AcquireLease(ctx, locks, "job", quick...)
	if CodeOf(err) != CodeLeaseBusy || !strings.Contains(err.Error(), "kernel lock") {
		t.Fatalf("a second acquirer: %v, want lease_busy naming the holder's kernel lock", err)
	}
	t.Logf("kept: %v", err)
	first := rec.HeartbeatAt
	time.Sleep(300 * time.Millisecond) // a few heartbeats
	if err := l.AssertOwned(); err != nil {
		t.Fatalf("AssertOwned: %v", err)
	}
	if rec := readLeaseRecord(t, l.Path()); rec.HeartbeatAt <= first {
		t.Errorf("the heartbeat did not renew the record: heartbeatAt %d, then %d", first, rec.HeartbeatAt)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if rec := readLeaseRecord(t, l.Path()); !rec.Released {
		t.Errorf("the record after Release is not released: %+v", rec)
	}
	if err := l.AssertOwned(); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("AssertOwned after Release: %v, want lease_lost", err)
	}
	l2, err := AcquireLease(ctx, locks, "job", quick...)
	if err != nil {
		t.Fatalf("acquiring the released lease: %v", err)
	}
	if l2.Fence() != 2 {
		t.Errorf("the second holder's fence is %d, want 2", l2.Fence())
	}
	l2.Release()
	// The released record was reclaimed by exact unlink: no quarantine
	// name is left beside the record and the counter.
	if got := strings.Join(entries(t, locks), ","); got != "job.fence,job.lock" {
		t.Errorf("the locks directory holds %s, want job.fence and job.lock", got)
	}
}

// TestWindowsLeaseHolderTerminatedTakenOverAtOnce: a child process holds
// a lease for ten minutes; it is kept from this process; TerminateProcess
// kills the child, the kernel drops its LockFileEx lock, and the next
// acquirer proves it gone by the lock's absence and takes the lease at
// once, with a larger fence, long before the record expires. On the old
// code the record could not claim the attestation (it was not visible
// through a second open), and the holder's lock over the record's bytes
// kept every reader out.
func TestWindowsLeaseHolderTerminatedTakenOverAtOnce(t *testing.T) {
	winOpenGate(t)
	ctx := context.Background()
	locks := filepath.Join(t.TempDir(), "locks")
	l, err := AcquireLease(ctx, locks, "job", CreateLocksDir())
	if err != nil {
		t.Fatal(err)
	}
	l.Release() // the locks directory exists and is owner-only; fence 1
	child, ready := startWinChild(t, "lease-hold", "STORE_DIR="+locks, "STORE_NAME=job",
		"STORE_LEASE_MS=600000", "STORE_HEARTBEAT_MS=60000")
	childFence, _ := strconv.ParseUint(ready, 10, 64)
	rec := readLeaseRecord(t, filepath.Join(locks, "job.lock"))
	if !rec.KernelLock || rec.Pid != child.cmd.Process.Pid {
		t.Fatalf("the child's record: %+v, want pid %d with the kernel lock", rec, child.cmd.Process.Pid)
	}
	_, err = AcquireLease(ctx, locks, "job", WaitBudget(200*time.Millisecond), PollInterval(20*time.Millisecond))
	if CodeOf(err) != CodeLeaseBusy {
		t.Fatalf("acquiring while the child holds the lease: %v, want lease_busy", err)
	}
	child.kill() // TerminateProcess
	start := time.Now()
	l2, err := AcquireLease(ctx, locks, "job", WaitBudget(30*time.Second), PollInterval(20*time.Millisecond))
	if err != nil {
		t.Fatalf("acquiring after the holder was terminated: %v", err)
	}
	defer l2.Release()
	took := time.Since(start)
	t.Logf("taken over %v after TerminateProcess (the record had %v left)", took.Round(time.Millisecond),
		time.Until(time.UnixMilli(rec.LeaseExpiresAt)).Round(time.Second))
	if l2.Fence() <= childFence {
		t.Errorf("the new holder's fence %d is not above the terminated holder's %d", l2.Fence(), childFence)
	}
	if !time.Now().Before(time.UnixMilli(rec.LeaseExpiresAt)) {
		t.Errorf("the lease was taken only after it expired: the kernel rule was not applied")
	}
}

// TestWindowsLeaseExpiredHolderByPid: a record without the attestation
// (as a TypeScript peer writes, or a volume without visible locks) is
// never taken from a live process, expired or not; once the holder is
// terminated and its lease expired, the pid rules (OpenProcess,
// GetExitCodeProcess) prove it gone and the lease is reclaimed.
func TestWindowsLeaseExpiredHolderByPid(t *testing.T) {
	winOpenGate(t)
	ctx := context.Background()
	locks := filepath.Join(t.TempDir(), "locks")
	l, err := AcquireLease(ctx, locks, "job", CreateLocksDir())
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	child, _ := startWinChild(t, "lease-hold", "STORE_DIR="+locks, "STORE_NAME=job",
		"STORE_LEASE_MS=300", "STORE_HEARTBEAT_MS=0", "STORE_NOATTEST=1")
	rec := readLeaseRecord(t, filepath.Join(locks, "job.lock"))
	if rec.KernelLock {
		t.Fatalf("the helper's record claims the attestation: %+v", rec)
	}
	time.Sleep(time.Until(time.UnixMilli(rec.LeaseExpiresAt)) + 50*time.Millisecond)
	_, err = AcquireLease(ctx, locks, "job", WaitBudget(200*time.Millisecond), PollInterval(20*time.Millisecond))
	if CodeOf(err) != CodeLeaseBusy || !strings.Contains(err.Error(), "not provably gone") {
		t.Fatalf("acquiring an expired lease from a live holder: %v, want lease_busy (owner not provably gone)", err)
	}
	child.kill()
	l2, err := AcquireLease(ctx, locks, "job", WaitBudget(10*time.Second), PollInterval(20*time.Millisecond))
	if err != nil {
		t.Fatalf("acquiring the expired lease of a terminated holder: %v", err)
	}
	l2.Release()
}

// TestWindowsStoreOperations: a store opens on Windows and its writes
// commit: Publish, Replace and RemoveExpected take the directory's commit
// lock (Dir.TryLock: LockFileEx on the private lock file, which List
// hides and Reap keeps), ReadExpected proves what it read, Mkdir, and
// ReplaceExpected refuses with atomic_unavailable, changing nothing
// (Windows has no rename exchange). Under a fence, writes assert it, and
// fail with lease_lost once it is released. On the old code every write
// that takes the commit lock failed (flock: unsupported).
func TestWindowsStoreOperations(t *testing.T) {
	winOpenGate(t)
	s, err := Open(filepath.Join(t.TempDir(), "store"), Create())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	if _, err := s.Publish("a.json", []byte("1")); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if _, err := s.Publish("a.json", []byte("2")); !errors.Is(err, exactfs.ErrDestinationExists) {
		t.Fatalf("Publish over an existing file: %v, want destination_exists", err)
	}
	if _, err := s.Replace("a.json", []byte("3")); err != nil {
		t.Fatalf("Replace: %v", err)
	}
	data, id, err := s.ReadExpected("a.json")
	if err != nil || string(data) != "3" {
		t.Fatalf("ReadExpected: %q %v", data, err)
	}
	if _, err := s.ReplaceExpected("a.json", []byte("4"), id); CodeOf(err) != exactfs.CodeAtomicUnavailable {
		t.Fatalf("ReplaceExpected: %v, want atomic_unavailable", err)
	}
	if data, _, _ := s.ReadExpected("a.json"); string(data) != "3" {
		t.Fatalf("the refused ReplaceExpected changed the file: %q", data)
	}
	if err := s.Mkdir("sub"); err != nil {
		t.Fatalf("Mkdir: %v", err)
	}
	if _, err := s.Publish("sub/b.json", []byte("b")); err != nil {
		t.Fatalf("Publish in a subdirectory: %v", err)
	}
	names, err := s.List("")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(names, ",") != "a.json,sub" {
		t.Errorf("List = %q, want a.json and sub (the lock file hidden)", names)
	}
	if _, err := os.Lstat(filepath.Join(s.Path(), exactfs.DirLockName)); err != nil {
		t.Errorf("no commit lock file after Replace: %v", err)
	}
	r, err := s.Reap()
	if err != nil || len(r.Removed) != 0 {
		t.Fatalf("Reap: %+v %v, want nothing removed", r, err)
	}
	if err := s.RemoveExpected("a.json", id); err != nil {
		t.Fatalf("RemoveExpected: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(s.Path(), "a.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a.json after RemoveExpected: %v", err)
	}

	fence, err := s.AcquireFence(context.Background(), "writer")
	if err != nil {
		t.Fatalf("AcquireFence: %v", err)
	}
	if _, err := s.Replace("c.json", []byte("c")); err != nil {
		t.Fatalf("Replace under the fence: %v", err)
	}
	if err := fence.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Publish("d.json", []byte("d")); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Publish after the fence was released: %v, want lease_lost", err)
	}
	if _, err := os.Lstat(filepath.Join(s.Path(), "d.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the fenced-out Publish left d.json: %v", err)
	}
}

// TestWindowsCommitLockAcrossProcesses: while another process holds a
// store directory's commit lock, a Replace there waits for it (here until
// its context ends: interrupted, nothing written); once that process is
// terminated, the kernel releases its lock and the Replace commits.
func TestWindowsCommitLockAcrossProcesses(t *testing.T) {
	winOpenGate(t)
	s, err := Open(filepath.Join(t.TempDir(), "store"), Create())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	child, _ := startWinChild(t, "dirlock-hold", "STORE_DIR="+s.Path())
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := s.ReplaceContext(ctx, "a.json", []byte("1")); CodeOf(err) != exactfs.CodeInterrupted {
		t.Fatalf("Replace while another process holds the commit lock: %v, want interrupted", err)
	}
	if _, err := os.Lstat(filepath.Join(s.Path(), "a.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the interrupted Replace wrote a.json: %v", err)
	}
	child.kill()
	if _, err := s.Replace("a.json", []byte("1")); err != nil {
		t.Fatalf("Replace after the lock's holder was terminated: %v", err)
	}
}

// TestWindowsLeaseNoKernelLockWhereUnseen: see wantNoClaimWhereUnseen.
func TestWindowsLeaseNoKernelLockWhereUnseen(t *testing.T) {
	winOpenGate(t)
	wantNoClaimWhereUnseen(t)
}
