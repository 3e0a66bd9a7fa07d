package statelock

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/liveness"
)

// The Windows attestation (ofd_windows.go) with real processes under Wine
// and on Windows: a holder's LockFileEx on [2^39, 2^40) of F.lock.

func init() {
	winChildren["hold"] = childHold
	winChildren["sleep"] = func() error { time.Sleep(time.Hour); return nil }
}

// childHold takes the lock of STATELOCK_STATE (config root
// STATELOCK_CONFIG), writes STATELOCK_READY and waits to be killed.
func childHold() error {
	h, err := TryLock(os.Getenv("STATELOCK_STATE"), WithConfigRoot(os.Getenv("STATELOCK_CONFIG")))
	if err != nil {
		return err
	}
	p := os.Getenv("STATELOCK_READY")
	if err := os.WriteFile(p+".tmp", []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return err
	}
	if err := os.Rename(p+".tmp", p); err != nil {
		return err
	}
	time.Sleep(time.Hour)
	runtime.KeepAlive(h) // held (its handle open: no finalizer closes it) until the process is killed
	return nil
}

// winChild is a child process of a test, killed (TerminateProcess) and
// reaped by the test's cleanup at the latest.
type winChild struct {
	cmd    *exec.Cmd
	exited chan error
}

// startWinChild starts the test binary in a child mode; with ready set,
// it waits (Wine starts a process slowly: up to a minute) until the child
// has written that file.
func startWinChild(t *testing.T, mode, ready string, env ...string) *winChild {
	t.Helper()
	c := &winChild{exited: make(chan error, 1)}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	c.cmd.Env = append(os.Environ(), append([]string{winChildEnv + "=" + mode, "STATELOCK_READY=" + ready}, env...)...)
	c.cmd.Stdout, c.cmd.Stderr = os.Stderr, os.Stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.exited <- c.cmd.Wait() }()
	t.Cleanup(c.kill)
	if ready == "" {
		return c
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			return c
		}
		select {
		case err := <-c.exited:
			c.exited <- err
			t.Fatalf("the %s child exited before it was ready: %v", mode, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the %s child was not ready after a minute", mode)
		}
	}
}

// kill terminates the child (TerminateProcess) and reaps it; again does
// nothing.
func (c *winChild) kill() {
	if c.exited == nil {
		return
	}
	c.cmd.Process.Kill()
	<-c.exited
	c.exited = nil
}

// TestWindowsHolderAttestsBeyondTheRecord: a holder's record claims the
// attestation (kernel_lock, no boot id), its lock is the one liveness asks
// about (liveness.Attested reads Alive through another handle), and the
// record's bytes stay readable through other handles while it is held (a
// lock over them would stop every reader, TypeScript peers first). After
// the release the record is a tombstone and the range is free. Fails on
// the code before ofd_windows.go: the record claimed nothing and no lock
// was held.
func TestWindowsHolderAttestsBeyondTheRecord(t *testing.T) {
	e := newEnv(t)
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(e.lock)
	if err != nil {
		t.Fatalf("the held record cannot be read through another handle: %v", err)
	}
	rec, err := ParseRecord(b)
	if err != nil || !rec.KernelLock || rec.BootID != "" || rec.StartTime != liveness.UnknownStartTime {
		t.Fatalf("the held record %s (%v): want kernel_lock, no boot id, start time unknown", b, err)
	}
	if j := attestedAt(t, e.lock); j.Verdict != liveness.Alive {
		t.Fatalf("liveness.Attested of the held record: %+v, want alive", j)
	}
	st, err := Inspect(e.state, e.opts()...)
	if err != nil || st.State != StateHeld || st.Holder == nil || !st.Holder.Kernel || !strings.Contains(st.Holder.Reason, "kernel lock") {
		t.Fatalf("Inspect of the held lock: %+v %+v, %v; want held, by its kernel lock", st, st.Holder, err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	if rec, err := ParseRecord(mustRead(t, e.lock)); err != nil || !rec.Released {
		t.Fatalf("after the release: %+v, %v; want the tombstone", rec, err)
	}
	if j := attestedAt(t, e.lock); j.Verdict != liveness.Dead {
		t.Fatalf("liveness.Attested after the release: %+v, want no lock (dead)", j)
	}
}

// attestedAt asks liveness.Attested through a handle of its own on p.
func attestedAt(t *testing.T, p string) liveness.Judgement {
	t.Helper()
	d, err := exactfs.OpenDir(filepath.Dir(p))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	f, err := d.OpenFile(filepath.Base(p), os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	j, ok := liveness.Attested(f)
	if !ok {
		t.Fatalf("liveness.Attested cannot answer on %s", p)
	}
	return j
}

// writeRecord puts rec at e.lock as a peer would have left it.
func writeRecord(t *testing.T, e *testEnv, rec *Record) {
	t.Helper()
	if err := os.WriteFile(e.lock, rec.Encode(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestWindowsUnlockedClaimOfLiveProcessIsReclaimed: a record that claims
// the attestation but whose range nobody holds belongs to a holder whose
// handle is gone, even though its pid names a live process (here a live
// child: the pid alone would keep the record for good). TryLock reclaims
// it at once. Fails without the attestation (ofd_windows.go): the pid
// rule reads the live child as alive and TryLock says the lock is held.
func TestWindowsUnlockedClaimOfLiveProcessIsReclaimed(t *testing.T) {
	e := newEnv(t)
	child := startWinChild(t, "sleep", "")
	writeRecord(t, e, &Record{Pid: int64(child.cmd.Process.Pid), StartTime: liveness.UnknownStartTime,
		Token: exactfs.NewUUID(), HostID: e.host.ID, KernelLock: true})
	st, err := Inspect(e.state, e.opts()...)
	if err != nil || st.State != StateStale || !strings.Contains(st.Holder.Reason, "no kernel lock") {
		t.Fatalf("Inspect: %+v %+v, %v; want stale by the kernel lock's absence", st, st.Holder, err)
	}
	h, err := TryLock(e.state, e.opts()...)
	if err != nil {
		t.Fatalf("TryLock over a record whose attestation nobody holds: %v", err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// TestWindowsHeldClaimOfDeadPidIsKept: a record that claims the
// attestation, whose range another handle holds, is alive whatever its
// pid says (here a pid no process has): the lock is the proof, and it is
// there. TryLock refuses and leaves the record. Fails without the
// attestation: the pid rule reads the pid as dead and reclaims.
func TestWindowsHeldClaimOfDeadPidIsKept(t *testing.T) {
	e := newEnv(t)
	rec := &Record{Pid: 2147483644, StartTime: liveness.UnknownStartTime,
		Token: exactfs.NewUUID(), HostID: e.host.ID, KernelLock: true}
	writeRecord(t, e, rec)
	d, err := exactfs.OpenDir(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	f, err := d.OpenFile(filepath.Base(e.lock), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := ofdLock(f); err != nil {
		t.Fatal(err)
	}
	_, err = TryLock(e.state, e.opts()...)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock over a record whose attestation is held: %v, want ErrLocked", err)
	}
	if got := mustRead(t, e.lock); string(got) != string(rec.Encode()) {
		t.Fatalf("the held record changed: %s", got)
	}
	f.Close() // the attestation goes with the handle
	h, err := TryLock(e.state, e.opts()...)
	if err != nil {
		t.Fatalf("TryLock once the attesting handle is closed: %v", err)
	}
	h.Unlock()
}

// TestWindowsReferenceRecordJudgedByPid: a record as the TypeScript
// reference writes it on Windows (start_time "unknown", no kernel_lock)
// is judged by its pid alone: a live process keeps it, a pid no process
// has gives it up.
func TestWindowsReferenceRecordJudgedByPid(t *testing.T) {
	e := newEnv(t)
	child := startWinChild(t, "sleep", "")
	live := &Record{Pid: int64(child.cmd.Process.Pid), StartTime: "unknown", Token: exactfs.NewUUID(), HostID: e.host.ID}
	writeRecord(t, e, live)
	if _, err := TryLock(e.state, e.opts()...); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock over a reference record of a live process: %v, want ErrLocked", err)
	}
	if got := mustRead(t, e.lock); string(got) != string(live.Encode()) {
		t.Fatalf("the live reference record changed: %s", got)
	}
	dead := &Record{Pid: 2147483644, StartTime: "unknown", Token: exactfs.NewUUID(), HostID: e.host.ID}
	writeRecord(t, e, dead)
	h, err := TryLock(e.state, e.opts()...)
	if err != nil {
		t.Fatalf("TryLock over a reference record of a pid no process has: %v", err)
	}
	h.Unlock()
}

// TestWindowsKilledHolderReclaimedAtOnce: a child process holds the lock;
// while it lives, no TryLock of this process takes it (and its record is
// untouched); once it is killed (TerminateProcess), the next TryLock
// takes the lock on its first attempt, and Inspect, before it, says the
// kernel lock is gone.
func TestWindowsKilledHolderReclaimedAtOnce(t *testing.T) {
	e := newEnv(t)
	ready := filepath.Join(e.dir, "..", "ready")
	child := startWinChild(t, "hold", ready, "STATELOCK_STATE="+e.state, "STATELOCK_CONFIG="+e.configRoot)
	held := mustRead(t, e.lock)
	for i := 0; i < 3; i++ {
		if _, err := TryLock(e.state, e.opts()...); !errors.Is(err, ErrLocked) {
			t.Fatalf("TryLock while the child holds: %v, want ErrLocked", err)
		}
	}
	st, err := Inspect(e.state, e.opts()...)
	if err != nil || st.State != StateHeld || !strings.Contains(st.Holder.Reason, "kernel lock") {
		t.Fatalf("Inspect while the child holds: %+v %+v, %v", st, st.Holder, err)
	}
	if got := mustRead(t, e.lock); string(got) != string(held) {
		t.Fatalf("the live child's record changed: %s, was %s", got, held)
	}
	child.kill()
	st, err = Inspect(e.state, e.opts()...)
	if err != nil || st.State != StateStale || !strings.Contains(st.Holder.Reason, "no kernel lock") {
		t.Fatalf("Inspect after the kill: %+v %+v, %v; want stale by the kernel lock's absence", st, st.Holder, err)
	}
	h, err := TryLock(e.state, e.opts()...)
	if err != nil {
		t.Fatalf("TryLock after the holder was killed: %v", err)
	}
	defer h.Unlock()
	if rec, err := ParseRecord(mustRead(t, e.lock)); err != nil || rec.Pid != int64(os.Getpid()) {
		t.Fatalf("after the reclaim F.lock is %+v, %v; want ours", rec, err)
	}
}

// TestWindowsTombstoneReused: a released record is reused in place by the
// next holder, as on Linux and as the reference does: F.lock keeps its
// file id from one cycle to the next, and Inspect finds nothing to say
// about the record's trust. Fails when the trust rule reads Windows' 0666
// as "not the protocol's mode" (every record distrusted, so every
// acquisition replaced the tombstone with a new file): checked under Wine,
// where Inspect then says so (Wine's file id is the Unix inode number,
// which a file created just after an unlink may get again, so the id
// check alone does not always see the replacement there).
func TestWindowsTombstoneReused(t *testing.T) {
	e := newEnv(t)
	var ids []uint64
	for i := 0; i < 3; i++ {
		h, err := Lock(context.Background(), e.state, e.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := exactfs.Lstat(e.lock)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, fi.Sys().(exactfs.Identity).Ino)
		if err := h.Unlock(); err != nil {
			t.Fatal(err)
		}
	}
	if ids[1] != ids[0] || ids[2] != ids[0] {
		t.Fatalf("F.lock's file id across three cycles: %v; want the tombstone reused", ids)
	}
	st, err := Inspect(e.state, e.opts()...)
	if err != nil || st.State != StateReleased || st.Detail != "" {
		t.Fatalf("Inspect after the cycles: %+v, %v; want released, nothing to say", st, err)
	}
}
