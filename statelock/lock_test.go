package statelock

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/exactfs/exactfs/liveness"
)

func TestLockUnlockCycleOnDisk(t *testing.T) {
	e := newEnv(t)
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	live, err := ParseRecord(mustRead(t, e.lock))
	if err != nil || live.Released || live.Pid != int64(os.Getpid()) || live.HostID != e.host.ID || live.Token != h.Token() {
		t.Fatalf("live record %s: %+v %v", mustRead(t, e.lock), live, err)
	}
	if ofdSupported {
		if live.StartTimeFormat != "linux-proc-v1" || live.BootID == "" || live.PidNS == 0 {
			t.Fatalf("live record lacks evidence: %s", mustRead(t, e.lock))
		}
	} else {
		// No OFD lock backs the record (macOS, the BSDs, the portable
		// build): it must claim none (a contender would read a claimed lock
		// it cannot find as a dead holder), and carries the process's own
		// evidence as liveness reads it (on macOS start_time "unknown").
		me, _ := liveness.Self()
		start := me.StartTime
		if start == "" {
			start = liveness.UnknownStartTime
		}
		if live.PidNS != 0 || live.PidfdIno != 0 || live.OfdSlot != 0 || live.StartTime != start ||
			live.StartTimeFormat != me.StartTimeFormat || live.BootID != me.BootID {
			t.Fatalf("live record %s claims evidence it has not, or lacks its own (%+v)", mustRead(t, e.lock), me)
		}
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := h.Unlock(); err == nil {
		t.Fatal("second Unlock succeeded")
	}
	for _, p := range []string{e.lock, e.sidecar} {
		b := mustRead(t, p)
		r, err := ParseRecord(b)
		if err != nil || !r.Released {
			t.Fatalf("%s is not a tombstone: %s", p, b)
		}
		// The tombstone's bytes, then only the spaces of SPEC §4.2's padding.
		if want := tombstone(r.Token, e.host.ID).Encode(); !ours(b, want) {
			t.Fatalf("%s:\n got %q\nwant %q (then spaces only)", p, b, want)
		}
		fi, _ := os.Lstat(p)
		if fi.Mode() != recordMode {
			t.Fatalf("%s mode %v", p, fi.Mode())
		}
	}
	if _, err := os.Lstat(e.claim); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("claim directory left behind: %v", err)
	}
}

func TestTryLockContention(t *testing.T) {
	e := newEnv(t)
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Unlock()
	start := time.Now()
	_, err = TryLock(e.state, e.opts()...)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock on a held lock: %v", err)
	}
	t.Log(err, time.Since(start))
	_, err = Lock(context.Background(), e.state, e.opts(WithWait(300*time.Millisecond))...)
	var le *LockError
	if !errors.As(err, &le) || le.Code != ReasonAcquireTimeout || !errors.Is(err, ErrLocked) {
		t.Fatalf("Lock with a short budget: %v", err)
	}
	t.Log(err)
}

// A wait is cancelled by its context promptly, with the context's error.
func TestLockContextCancel(t *testing.T) {
	e := newEnv(t)
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, err = Lock(ctx, e.state, e.opts(WithWait(time.Minute))...)
	took := time.Since(start)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrLocked) {
		t.Fatalf("Lock: %v", err)
	}
	if took > 5*time.Second {
		t.Fatalf("cancel took %s", took)
	}
	t.Logf("%v after %s", err, took.Round(time.Millisecond))
}

// With runs the function under the lock and joins its error with a
// release failure; Update leaves the state file alone when fn fails and
// replaces it durably (mode 0600) when it succeeds.
func TestWithAndUpdate(t *testing.T) {
	e := newEnv(t)
	ran := false
	if err := With(context.Background(), e.state, func() error {
		ran = true
		if _, err := TryLock(e.state, e.opts()...); !errors.Is(err, ErrLocked) {
			t.Errorf("TryLock inside With: %v", err)
		}
		return nil
	}, e.opts()...); err != nil || !ran {
		t.Fatalf("With: %v %v", err, ran)
	}
	boom := errors.New("boom")
	if err := With(context.Background(), e.state, func() error { return boom }, e.opts()...); !errors.Is(err, boom) {
		t.Fatalf("With: %v", err)
	}
	for i := 0; i < 3; i++ {
		err := Update(context.Background(), e.state, func(old []byte) ([]byte, error) {
			return append(old, 'x'), nil
		}, e.opts()...)
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := Update(context.Background(), e.state, func(old []byte) ([]byte, error) { return nil, boom }, e.opts()...); !errors.Is(err, boom) {
		t.Fatalf("Update: %v", err)
	}
	if b := mustRead(t, e.state); string(b) != "xxx" {
		t.Fatalf("state %q", b)
	}
	if fi, _ := os.Lstat(e.state); fi.Mode() != recordMode {
		t.Fatalf("state mode %v", fi.Mode())
	}
	// A symlink planted at the state file is refused, never read through.
	if !symlinksHere(t) {
		return
	}
	os.Remove(e.state)
	os.Symlink("/etc/passwd", e.state)
	if err := Update(context.Background(), e.state, func(old []byte) ([]byte, error) { return old, nil }, e.opts()...); err == nil {
		t.Fatal("Update read through a symlink")
	}
}
