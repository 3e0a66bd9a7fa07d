//go:build unix

package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/exactfs/exactfs/etcd"
	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/liveness"
	"github.com/exactfs/exactfs/locker"
)

// TestCommitWithLostAnswerIsResolved: a commit whose answer is lost is
// resolved from the history, never re-run: fn runs once, the write is
// applied once, and Update says exactly what happened.
func TestCommitWithLostAnswerIsResolved(t *testing.T) {
	c := startCluster(t)
	raw := c.client(t)
	ctx := context.Background()
	newLock := func(key string, opts ...etcd.Option) *etcd.Lock {
		opts = append([]etcd.Option{etcd.WithHostIdentity(liveness.FixedHostIdentity("e2e-host"))}, opts...)
		return etcd.NewClient(c.client(t), opts...).Locker(key)
	}
	value := func(key string) (string, int64) {
		t.Helper()
		r, err := raw.Get(ctx, key)
		if err != nil || len(r.Kvs) != 1 {
			t.Fatalf("reading %s: %v %v", key, r, err)
		}
		return string(r.Kvs[0].Value), r.Kvs[0].ModRevision
	}

	t.Run("first answer lost, write applied", func(t *testing.T) {
		l := newLock("/e2e/resolve/once")
		var restore func()
		lost := 0
		restore = hook.Set(hook.EtcdCommitAnswerLost, func(string) { lost++; restore() })
		defer restore()
		calls := 0
		cm, err := l.UpdateCommit(ctx, func(old []byte) ([]byte, error) { calls++; return []byte("v1"), nil })
		if err != nil || calls != 1 || lost != 1 {
			t.Fatalf("UpdateCommit: %+v %v after %d calls, %d lost answers; want success, 1 call, 1 lost answer", cm, err, calls, lost)
		}
		v, rev := value("/e2e/resolve/once")
		if v != "v1" || cm.Revision != rev {
			t.Fatalf("state %q at %d, commit says %d; want v1 at the commit's revision", v, rev, cm.Revision)
		}
	})

	t.Run("no answer ever, write applied", func(t *testing.T) {
		l := newLock("/e2e/resolve/never", etcd.WithOpTimeout(2*time.Second))
		restore := hook.Set(hook.EtcdCommitAnswerLost, func(string) {})
		defer restore()
		calls := 0
		cm, err := l.UpdateCommit(ctx, func(old []byte) ([]byte, error) { calls++; return []byte("v2"), nil })
		if err != nil || calls != 1 {
			t.Fatalf("UpdateCommit: %+v %v after %d calls; want success after 1 call", cm, err, calls)
		}
		if v, rev := value("/e2e/resolve/never"); v != "v2" || cm.Revision != rev {
			t.Fatalf("state %q at %d, commit says %d", v, rev, cm.Revision)
		}
	})

	t.Run("lease gone before the commit, no answer ever", func(t *testing.T) {
		key := "/e2e/resolve/lost"
		if _, err := raw.Put(ctx, key, "before"); err != nil {
			t.Fatal(err)
		}
		l := newLock(key, etcd.WithOpTimeout(2*time.Second))
		restore := hook.Set(hook.EtcdCommitAnswerLost, func(string) {})
		defer restore()
		calls := 0
		_, err := l.UpdateCommit(ctx, func(old []byte) ([]byte, error) {
			calls++
			q, err := l.InspectQueue(ctx)
			if err != nil || len(q.Entries) != 1 {
				t.Fatalf("queue: %+v %v", q, err)
			}
			if _, err := raw.Revoke(ctx, q.Entries[0].Lease); err != nil {
				t.Fatal(err)
			}
			return []byte("too late"), nil
		})
		if !errors.Is(err, locker.ErrLost) || calls != 1 {
			t.Fatalf("UpdateCommit after the lease was revoked: %v after %d calls; want ErrLost after 1", err, calls)
		}
		if v, _ := value(key); v != "before" {
			t.Fatalf("state %q; want it untouched", v)
		}
	})
}
