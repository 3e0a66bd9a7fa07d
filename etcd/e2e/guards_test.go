//go:build unix

package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/exactfs/exactfs/etcd"
	"github.com/exactfs/exactfs/liveness"
	"github.com/exactfs/exactfs/statelock"
)

// TestLibraryGuardsAsFiles: the etcd library's Update answers an empty
// result and "no change" as statelock.Update does (issue 20 item 2, issue
// 21 item 4): an empty result is refused with statelock.ErrEmptyResult and
// the key left untouched, unless WithAllowEmpty(true); statelock.ErrNoChange
// writes nothing and is success; and the lock is free after each.
func TestLibraryGuardsAsFiles(t *testing.T) {
	c := startCluster(t)
	raw := c.client(t)
	const key = "/e2e/guards/state"
	id := etcd.WithHostIdentity(liveness.FixedHostIdentity("e2e-host"))
	value := func() (string, int64) {
		t.Helper()
		r, err := raw.Get(context.Background(), key)
		if err != nil || len(r.Kvs) != 1 {
			t.Fatalf("reading %s: %v %v", key, r, err)
		}
		return string(r.Kvs[0].Value), r.Kvs[0].ModRevision
	}
	ctx := context.Background()
	cl := etcd.NewClient(c.client(t), id, etcd.WithWait(5*time.Second))
	defer cl.Close()
	l := cl.Locker(key)
	if err := l.Update(ctx, func([]byte) ([]byte, error) { return []byte("1"), nil }); err != nil {
		t.Fatal(err)
	}
	_, rev := value()

	for name, fn := range map[string]func([]byte) ([]byte, error){
		"nil":   func([]byte) ([]byte, error) { return nil, nil },
		"empty": func([]byte) ([]byte, error) { return []byte{}, nil },
	} {
		err := l.Update(ctx, fn)
		if !errors.Is(err, statelock.ErrEmptyResult) {
			t.Fatalf("%s result: want statelock.ErrEmptyResult, got %v", name, err)
		}
		t.Log(err)
		if v, r := value(); v != "1" || r != rev {
			t.Fatalf("%s result: the key changed to %q (mod revision %d, was %d)", name, v, r, rev)
		}
	}
	commit, err := l.UpdateCommit(ctx, func([]byte) ([]byte, error) {
		return nil, fmt.Errorf("nothing to do: %w", statelock.ErrNoChange)
	})
	if err != nil || commit.Revision != 0 {
		t.Fatalf("ErrNoChange: want success without a revision, got %+v %v", commit, err)
	}
	if v, r := value(); v != "1" || r != rev {
		t.Fatalf("ErrNoChange: the key changed to %q (mod revision %d, was %d)", v, r, rev)
	}

	// The lock is free after each: another client takes it at once.
	other := etcd.NewClient(c.client(t), id, etcd.WithWait(0), etcd.WithAllowEmpty(true))
	defer other.Close()
	if err := other.Locker(key).Update(ctx, func([]byte) ([]byte, error) { return nil, nil }); err != nil {
		t.Fatalf("WithAllowEmpty(true): %v", err)
	}
	if v, _ := value(); v != "" {
		t.Fatalf("WithAllowEmpty(true): the key holds %q, want it empty", v)
	}
}
