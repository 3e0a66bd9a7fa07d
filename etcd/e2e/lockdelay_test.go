//go:build unix

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/exactfs/exactfs/etcd"
	"github.com/exactfs/exactfs/liveness"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestLockDelay: a waiter whose predecessor lost the lock (its lease was
// revoked, as when it expires) waits its lock-delay before it gets the
// lock, even when its own deadline passes meanwhile (the lock is already
// its: a shorter delay would let it act early); a waiter whose
// predecessor released the lock does not wait.
func TestLockDelay(t *testing.T) {
	c := startCluster(t)
	raw := c.client(t)
	id := etcd.WithHostIdentity(liveness.FixedHostIdentity("e2e-host"))
	const delay = 1500 * time.Millisecond
	queued := func(key string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			r, err := raw.Get(context.Background(), key+etcd.LockSuffix, clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err == nil && r.Count == 2 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the waiter never queued")
			}
		}
	}
	for _, lost := range []bool{true, false} {
		key := "/e2e/lockdelay/released"
		if lost {
			key = "/e2e/lockdelay/lost"
		}
		a := etcd.NewClient(c.client(t), id)
		defer a.Close()
		h, err := a.Locker(key).Acquire(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		b := etcd.NewClient(c.client(t), id, etcd.WithLockDelay(delay))
		defer b.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		type result struct {
			h   *etcd.Held
			err error
			at  time.Time
		}
		done := make(chan result, 1)
		go func() {
			w, err := b.Locker(key).Acquire(ctx, 10*time.Second)
			done <- result{w, err, time.Now()}
		}()
		queued(key)
		t0 := time.Now()
		if lost {
			if _, err := raw.Revoke(context.Background(), h.Lease()); err != nil {
				t.Fatal(err)
			}
		} else if err := h.Unlock(); err != nil {
			t.Fatal(err)
		}
		r := <-done
		if r.err != nil {
			t.Fatalf("lost %v: the waiter: %v", lost, r.err)
		}
		waited := r.at.Sub(t0)
		t.Logf("lost %v: the waiter got the lock %s after its predecessor went (lock-delay %s)", lost, waited.Round(time.Millisecond), r.h.Delayed())
		switch {
		case lost && (r.h.Delayed() != delay || waited < delay):
			t.Errorf("after a lost predecessor: delayed %s, got the lock %s after; want the full %s", r.h.Delayed(), waited, delay)
		case !lost && r.h.Delayed() != 0:
			t.Errorf("after a released predecessor: delayed %s; want none", r.h.Delayed())
		}
		if err := r.h.Unlock(); err != nil {
			t.Fatal(err)
		}
	}
}
