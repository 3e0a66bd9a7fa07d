//go:build unix

package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/exactfs/exactfs/etcd"
	"github.com/exactfs/exactfs/etcd/internal/etcdhook"
	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/liveness"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestCancelledCallsNeverStrandTheLock: in one long-lived client (whose
// session lease outlives every call), a lock call cancelled at any step of
// joining the queue or waiting in it leaves no queue key behind: right
// after each cancelled call the queue holds only what was there before, and
// at the end the same client and another one take the lock at the first
// attempt. Steps are hit two ways: a hook that cancels the call exactly at
// a named step, and a sweep of deadlines from 50 µs up, which lands inside
// the queue transaction's round trip (the case that stranded the lock
// before: the key was put, the call returned, nobody deleted it).
func TestCancelledCallsNeverStrandTheLock(t *testing.T) {
	c := startCluster(t)
	raw := c.client(t)
	const key = "/e2e/cancel/state"
	prefix := key + etcd.LockSuffix
	id := etcd.WithHostIdentity(liveness.FixedHostIdentity("e2e-host"))
	cl := etcd.NewClient(c.client(t), id, etcd.WithWait(3*time.Second))
	defer cl.Close()
	l := cl.Locker(key)
	other := etcd.NewClient(c.client(t), id, etcd.WithWait(0))
	defer other.Close()

	// queue returns the keys in the lock's queue.
	queue := func() []string {
		t.Helper()
		r, err := raw.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, kv := range r.Kvs {
			keys = append(keys, string(kv.Key))
		}
		return keys
	}
	expectQueue := func(what string, want ...string) {
		t.Helper()
		if got := queue(); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("%s: the queue holds %q, want %q", what, got, want)
		}
	}
	ran := 0
	fn := func(old []byte) ([]byte, error) { ran++; return []byte(fmt.Sprint(ran)), nil }

	// A holder in another client, so that our calls queue and wait.
	hold := func() *etcd.Held {
		t.Helper()
		h, err := other.Locker(key).Acquire(context.Background(), 0)
		if err != nil {
			t.Fatalf("holder: %v", err)
		}
		return h
	}

	for _, step := range []string{etcdhook.QueueAnswered, etcdhook.WaitLook, etcdhook.WaitWatch} {
		h := hold()
		ctx, cancel := context.WithCancel(context.Background())
		fired := 0
		restore := hook.Set(step, func(string) { fired++; cancel() })
		before := ran
		err := l.Update(ctx, fn)
		restore()
		cancel()
		if fired == 0 || !errors.Is(err, context.Canceled) || ran != before {
			t.Fatalf("cancelled at %s (fired %d times): %v, fn ran %d times; want context.Canceled, fn not run", step, fired, err, ran-before)
		}
		expectQueue("after a call cancelled at "+step, h.Key())
		if err := h.Unlock(); err != nil {
			t.Fatal(err)
		}
	}

	// Deadlines across the round trips of joining (uncontended) and of
	// joining and waiting (contended).
	for _, contended := range []bool{false, true} {
		var h *etcd.Held
		var want []string
		if contended {
			h = hold()
			want = []string{h.Key()}
		}
		fails := 0
		for d := 50 * time.Microsecond; d < 400*time.Millisecond; d = d * 5 / 4 {
			ctx, cancel := context.WithTimeout(context.Background(), d)
			err := l.Update(ctx, fn)
			cancel()
			if err != nil {
				fails++
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("deadline %s, contended %v: %v; want an error matching context.DeadlineExceeded", d, contended, err)
				}
			}
			expectQueue(fmt.Sprintf("after a call with a deadline of %s (contended %v, err %v)", d, contended, err), want...)
		}
		if fails == 0 {
			t.Fatalf("contended %v: no call of the sweep was cut short", contended)
		}
		t.Logf("contended %v: %d calls cut short by their deadline, none left a key", contended, fails)
		if h != nil {
			if err := h.Unlock(); err != nil {
				t.Fatal(err)
			}
		}
	}

	// The next calls get the lock at once: one attempt each.
	h, err := l.Acquire(context.Background(), 0)
	if err != nil {
		t.Fatalf("the long-lived client's next lock call: %v", err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	h, err = other.Locker(key).Acquire(context.Background(), 0)
	if err != nil {
		t.Fatalf("another client's next lock call: %v", err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := l.Update(context.Background(), fn); err != nil {
		t.Fatalf("the next Update: %v", err)
	}
	expectQueue("at the end")
}

// TestStrandedKeyIsSweptByTheNextCall: when the cluster cannot be reached
// to delete the key of a cancelled call (the link is cut right after the
// key was put), the client remembers it and its next lock call deletes it
// before queueing, instead of queueing behind its own ghost.
func TestStrandedKeyIsSweptByTheNextCall(t *testing.T) {
	c := startCluster(t)
	raw := c.client(t)
	const key = "/e2e/stranded/state"
	p := startProxy(t, strings.TrimPrefix(c.members[0].clientURL, "http://"), 0)
	cl := etcd.NewClient(c.client(t, "http://"+p.addr), etcd.WithHostIdentity(liveness.FixedHostIdentity("e2e-host")),
		etcd.WithWait(0), etcd.WithOpTimeout(1500*time.Millisecond))
	defer cl.Close()
	l := cl.Locker(key)
	// Start the session first, so that the cut falls on the queue step.
	if err := l.Update(context.Background(), func(b []byte) ([]byte, error) { return []byte("1"), nil }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var restore func()
	restore = hook.Set(etcdhook.QueueAnswered, func(string) { restore(); p.cut(); cancel() })
	defer restore()
	if err := l.Update(ctx, func(b []byte) ([]byte, error) { return b, nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Update cancelled with the link cut: %v; want context.Canceled", err)
	}
	r, err := raw.Get(context.Background(), key+etcd.LockSuffix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || r.Count != 1 {
		t.Fatalf("the queue holds %v keys (%v); want the one the cut kept us from deleting", r.Count, err)
	}
	p.reset()
	h, err := l.Acquire(context.Background(), 0)
	if err != nil {
		t.Fatalf("the next lock call of the same client: %v; want the lock at the first attempt", err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
}
