package statelock

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/exactfs/exactfs/liveness"
)

// Kernel slots (SPEC §4.8.1): what a record with "ofd_slot" means, to
// whom, and that no two processes of one boot ever share a number.

// requireSlot skips where this kernel gives no per-process pidfd inode
// (before pidfs, Linux 6.9): there the cohort is off and records carry no
// slot, which TestSlotAbsentWithoutPidfs covers.
func requireSlot(t *testing.T) uint64 {
	t.Helper()
	ino, err := liveness.PidfdIno(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	n := slotOf(ino)
	if n == 0 {
		t.Skipf("no kernel slot on this kernel (pidfd inode %d: not on pidfs), the cohort is off", ino)
	}
	return n
}

// A held F.lock names this process's slot right after boot_id, and the
// holder's kernel lock is the shared lock on that one byte: a second
// shared lock on it is granted (another holder of the same slot in a
// hand-off would be), an exclusive lock on the whole holder range is
// refused (an older exactfs holder's), and an older judge, which asks
// about the whole range [0, queueBase), reads the holder as alive.
func TestSlotRecordAndLock(t *testing.T) {
	n := requireSlot(t)
	e := newEnv(t)
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Unlock()
	b := mustRead(t, e.lock)
	r, err := ParseRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	if r.OfdSlot != n {
		t.Fatalf("record %s: ofd_slot %d, want this process's slot %d", b, r.OfdSlot, n)
	}
	if want := fmt.Sprintf(`"boot_id":%q,"ofd_slot":%d`, r.BootID, n); !bytes.Contains(b, []byte(want)) {
		t.Fatalf("record %s: want %s (ofd_slot right after boot_id)", b, want)
	}
	f, err := os.Open(e.lock)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if held, known := slotHeld(f.Fd(), n); !known || !held {
		t.Fatalf("slot byte: held %v known %v, want held", held, known)
	}
	if held, known := slotHeld(f.Fd(), n+1); !known || held {
		t.Fatalf("the next slot's byte: held %v known %v, want free (the holder locks one byte)", held, known)
	}
	if j, ok := liveness.Attested(f); !ok || j.Verdict != liveness.Alive {
		t.Fatalf("an older judge (whole holder range): %v %v, want alive", j, ok)
	}
	rw, err := os.OpenFile(e.lock, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if err := ofdLock(rw); err != errOFDConflict {
		t.Fatalf("an older holder's exclusive whole-range lock beside the slot: %v, want a conflict", err)
	}
	if err := slotLock(rw.Fd(), n); err != nil {
		t.Fatalf("a second shared lock on the slot byte: %v", err)
	}
	ofdUnlock(rw)
}

// The judge of a record with a slot asks about that byte only: a dead
// holder is dead even while other locks sit on the inode in the holder
// range (a taker proving a tombstone, a waiter's slot); and the slot held
// by anyone means alive. On the old code, which asked about the whole
// range, the dead holder read as alive here.
func TestSlotJudgeAsksTheSlotOnly(t *testing.T) {
	n := requireSlot(t)
	e := newEnv(t)
	l, err := newLocker(e.state, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	rec := l.lockOwner()
	if rec.OfdSlot != n {
		t.Fatalf("lockOwner: ofd_slot %d, want %d", rec.OfdSlot, n)
	}
	rec.OfdSlot = n + 7 // a slot nobody holds: its holder is gone
	if err := os.WriteFile(e.lock, rec.Encode(), 0o600); err != nil {
		t.Fatal(err)
	}
	other, err := os.Open(e.lock)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := slotLock(other.Fd(), n+9); err != nil {
		t.Fatal(err)
	}
	judge := func() verdict {
		f, s, err := l.openCapture(l.lockName)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return l.judgeRecord(s, f)
	}
	if v := judge(); !v.dead() {
		t.Fatalf("slot free, another slot held: %v, want dead", v)
	}
	if err := slotLock(other.Fd(), n+7); err != nil {
		t.Fatal(err)
	}
	if v := judge(); v.dead() {
		t.Fatalf("slot held: %v, want alive", v)
	}
}

// A record's ofd_slot outside [1, queueBase-slotBase) names no slot: it is
// ignored on read, and the record is judged by the whole range as before.
func TestSlotOutOfRangeIgnored(t *testing.T) {
	for _, s := range []string{"0", strconv.FormatUint(queueBase-slotBase, 10), "-1", `"5"`, "1e3"} {
		r, err := ParseRecord([]byte(`{"pid":7,"start_time":"1","token":"t","boot_id":"b","ofd_slot":` + s + `}`))
		if err != nil || r.OfdSlot != 0 {
			t.Errorf("ofd_slot %s: %+v %v, want a valid record without a slot", s, r, err)
		}
	}
	if slotOf(0) != 0 || slotOf(queueBase-slotBase) != 0 || slotOf(5) != 5 {
		t.Fatal("slotOf range")
	}
}

// Slot numbers are never reused across processes: processes started one
// after the other, each exiting before the next starts (so pids may come
// back), report distinct slots, none of them ours. The first prototype
// numbered slots by mailbox position, and a later process took a dead
// sticky owner's number and judged its record alive forever.
func TestSlotNeverReusedAcrossProcesses(t *testing.T) {
	self := requireSlot(t)
	seen := map[uint64]int{self: os.Getpid()}
	for i := range 12 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := workerCmd(ctx, "slot").Output()
		cancel()
		if err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
		f := strings.Fields(string(out))
		if len(f) != 2 {
			t.Fatalf("worker %d printed %q", i, out)
		}
		n, _ := strconv.ParseUint(f[0], 10, 64)
		pid, _ := strconv.Atoi(f[1])
		if n == 0 {
			t.Fatalf("worker %d (pid %d) has no slot on a kernel that gave us one", i, pid)
		}
		if prev, dup := seen[n]; dup {
			t.Fatalf("slot %d of pid %d was already pid %d's", n, pid, prev)
		}
		seen[n] = pid
	}
}

// With kernel slots off (a kernel without pidfs, or the switch) the
// record carries no ofd_slot and the holder locks the whole range.
func TestSlotAbsentWithoutSlots(t *testing.T) {
	t.Parallel() // its switch is its own call's; it sets no hook and uses its own directory
	e := newEnv(t)
	e.extra = []Option{withoutKernelSlots()}
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Unlock()
	b := mustRead(t, e.lock)
	if bytes.Contains(b, []byte("ofd_slot")) {
		t.Fatalf("record %s carries a slot with slots off", b)
	}
	rw, err := os.OpenFile(e.lock, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if err := slotLock(rw.Fd(), 1); err != errOFDConflict {
		t.Fatalf("a slot lock beside a whole-range holder: %v, want a conflict", err)
	}
}

// The slot switch is the call's, not the process's: while one call of
// this process holds a lock without slots, another holds its own lock
// with its slot in the record. (With the process-wide variable before,
// the second record carried no slot either.)
func TestSlotSwitchIsTheCalls(t *testing.T) {
	t.Parallel() // as TestSlotAbsentWithoutSlots
	n := requireSlot(t)
	without, with := newEnv(t), newEnv(t)
	h1, err := Lock(context.Background(), without.state, without.opts(withoutKernelSlots())...)
	if err != nil {
		t.Fatal(err)
	}
	defer h1.Unlock()
	h2, err := Lock(context.Background(), with.state, with.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Unlock()
	slot := func(e *testEnv) uint64 {
		r, err := ParseRecord(mustRead(t, e.lock))
		if err != nil {
			t.Fatalf("F.lock: %v", err)
		}
		return r.OfdSlot
	}
	if got := slot(without); got != 0 {
		t.Fatalf("the call without slots wrote slot %d: %s", got, mustRead(t, without.lock))
	}
	if got := slot(with); got != n {
		t.Fatalf("the call with slots wrote slot %d, want %d: %s", got, n, mustRead(t, with.lock))
	}
}

// TestSlotJudgeSameBootForeignHost: a slot record written on this running
// kernel (this boot's boot_id) under another host id (another config root
// on this machine: root's one-off exactfs lock in a service's directory)
// is judged by its slot, like any record of this boot: free means dead,
// held means alive. The host rule still stands for what the kernel cannot
// vouch for: the same record with another boot's id or none, and a
// TypeScript record (no slot), stay alive (foreign host). On the old code
// the free slot under a foreign host id read as alive (foreign host).
func TestSlotJudgeSameBootForeignHost(t *testing.T) {
	n := requireSlot(t)
	e := newEnv(t)
	l, err := newLocker(e.state, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	base := l.lockOwner()
	if base.OfdSlot != n || base.BootID == "" {
		t.Fatalf("lockOwner: ofd_slot %d boot %q", base.OfdSlot, base.BootID)
	}
	foreign := "f" + strings.Repeat("0", len(base.Host())-1)
	if l.host.IsLocal(foreign) {
		t.Fatalf("%s is local", foreign)
	}
	judge := func(rec *Record) verdict {
		t.Helper()
		if err := os.WriteFile(e.lock, rec.Encode(), 0o600); err != nil {
			t.Fatal(err)
		}
		f, s, err := l.openCapture(l.lockName)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return l.judgeRecord(s, f)
	}
	rec := *base
	rec.HostID, rec.PidNSHostID = foreign, ""
	rec.OfdSlot = n + 11 // nobody holds it
	if v := judge(&rec); !v.dead() {
		t.Fatalf("this boot's record under another host id, its slot free: %v, want dead", v)
	}
	other, err := os.Open(e.lock)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := slotLock(other.Fd(), n+11); err != nil {
		t.Fatal(err)
	}
	if v := judge(&rec); v.dead() {
		t.Fatalf("this boot's record under another host id, its slot held: %v, want alive", v)
	}
	other.Close()
	for name, boot := range map[string]string{"another boot": "0b5e6c3a-1111-2222-3333-444455556666", "no boot id": ""} {
		r := rec
		r.BootID = boot
		if v := judge(&r); v.Verdict != liveness.Alive || !strings.Contains(v.Reason, "foreign host") {
			t.Errorf("%s, another host id, a free slot: %v, want alive (foreign host)", name, v)
		}
	}
	ts, err := ParseRecord(tsStyleRecord(t, os.Getpid(), foreign))
	if err != nil {
		t.Fatal(err)
	}
	if v := judge(ts); v.Verdict != liveness.Alive || !strings.Contains(v.Reason, "foreign host") {
		t.Errorf("a TypeScript record of another host: %v, want alive (foreign host)", v)
	}
}
