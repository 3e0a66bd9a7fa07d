package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/exactfs/exactfs/etcd"
	"github.com/exactfs/exactfs/liveness"
	"github.com/exactfs/exactfs/locker"
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
