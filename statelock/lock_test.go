package statelock

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
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
	if live.StartTimeFormat != "linux-proc-v1" || live.BootID == "" || live.PidNS == 0 {
		t.Fatalf("live record lacks evidence: %s", mustRead(t, e.lock))
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
		if want := tombstone(r.Token, e.host.ID).Encode(); string(b) != string(want) {
			t.Fatalf("%s:\n got %s\nwant %s", p, b, want)
		}
		fi, _ := os.Lstat(p)
		if fi.Mode() != 0o600 {
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
	if !errors.As(err, &le) || le.Reason != ReasonAcquireTimeout || !errors.Is(err, ErrLocked) {
		t.Fatalf("Lock with a short budget: %v", err)
	}
	t.Log(err)
}
