//go:build unix

package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/exactfs/exactfs/etcd"
	"github.com/exactfs/exactfs/liveness"
	"github.com/exactfs/exactfs/locker"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestLostAndRevokedLease: a holder whose lease is revoked behind its back
// learns it through Lost and Err, its Unlock says the lock was lost and
// touches nothing, a successor gets the lock, and the next lock call of the
// same client starts a new session instead of failing on the dead lease.
func TestLostAndRevokedLease(t *testing.T) {
	c := startCluster(t)
	raw := c.client(t)
	ctx := context.Background()
	cl := etcd.NewClient(c.client(t), etcd.WithHostIdentity(liveness.FixedHostIdentity("e2e-host")), etcd.WithWait(10*time.Second))
	l := cl.Locker("/e2e/lease")
	h, err := l.Acquire(ctx, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	lost := h.Lost()
	if _, err := raw.Revoke(ctx, h.Lease()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lost:
	case <-time.After(10 * time.Second):
		t.Fatal("Lost not closed 10 s after the lease was revoked")
	}
	if err := h.Err(); !errors.Is(err, locker.ErrLost) {
		t.Fatalf("Err after loss: %v; want ErrLost", err)
	}
	other := etcd.NewClient(c.client(t), etcd.WithWait(5*time.Second)).Locker("/e2e/lease")
	h2, err := other.Acquire(ctx, 5*time.Second)
	if err != nil {
		t.Fatalf("successor: %v", err)
	}
	if err := h.Unlock(); !errors.Is(err, locker.ErrLost) {
		t.Fatalf("Unlock of a lost lock: %v; want ErrLost", err)
	}
	st, err := other.Inspect(ctx)
	if err != nil || st.State != "held" || st.Holder.Token != h2.Token() {
		t.Fatalf("after the lost holder's Unlock: %+v %v; want still held by the successor (token %s)", st, err, h2.Token())
	}
	if err := h2.Unlock(); err != nil {
		t.Fatal(err)
	}

	// Same client, lease revoked between two calls, before the keepalive
	// can notice.
	h3, err := l.Acquire(ctx, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := h3.Unlock(); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Revoke(ctx, h3.Lease()); err != nil {
		t.Fatal(err)
	}
	if err := l.Update(ctx, func(old []byte) ([]byte, error) { return []byte("after revoke"), nil }); err != nil {
		t.Fatalf("Update after the session lease was revoked: %v", err)
	}
}

// TestWaiterWhoseLeaseExpiredRequeues: a waiter whose session lease ends
// while it waits (here revoked, as the server does when a paused or cut-off
// waiter's TTL runs out) never held the lock and ran nothing: it joins the
// queue again with a new lease and gets the lock within its wait budget,
// instead of failing with "lost while waiting".
func TestWaiterWhoseLeaseExpiredRequeues(t *testing.T) {
	c := startCluster(t)
	raw := c.client(t)
	ctx := context.Background()
	id := etcd.WithHostIdentity(liveness.FixedHostIdentity("e2e-host"))
	holderCl := etcd.NewClient(c.client(t), id)
	defer holderCl.Close()
	h, err := holderCl.Locker("/e2e/requeue").Acquire(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	waiterCl := etcd.NewClient(c.client(t), id)
	defer waiterCl.Close()
	type result struct {
		h   *etcd.Held
		err error
	}
	done := make(chan result, 1)
	go func() {
		w, err := waiterCl.Locker("/e2e/requeue").Acquire(ctx, 20*time.Second)
		done <- result{w, err}
	}()
	// Find the waiter's key and revoke its lease.
	var lease clientv3.LeaseID
	for deadline := time.Now().Add(10 * time.Second); lease == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		r, err := raw.Get(ctx, "/e2e/requeue"+etcd.LockSuffix, clientv3.WithPrefix())
		if err == nil && len(r.Kvs) == 2 {
			w := r.Kvs[0] // keys sort by name; the waiter's is the newer
			if r.Kvs[1].CreateRevision > w.CreateRevision {
				w = r.Kvs[1]
			}
			lease = clientv3.LeaseID(w.Lease)
		}
	}
	if lease == 0 {
		t.Fatal("the waiter never queued")
	}
	if _, err := raw.Revoke(ctx, lease); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the waiter notices within its 1 s re-check
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("a waiter whose lease expired: %v; want the lock after re-queueing", r.err)
	}
	if r.h.Lease() == lease {
		t.Fatalf("the waiter holds the lock with the revoked lease %x", int64(lease))
	}
	if err := r.h.Unlock(); err != nil {
		t.Fatal(err)
	}
}
