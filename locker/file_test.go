package locker_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/exactfs/exactfs/locker"
	"github.com/exactfs/exactfs/statelock"
)

func newFile(t *testing.T) (locker.Locker, string) {
	t.Helper()
	dir := t.TempDir()
	// Before the directory goes (cleanups run last first): a lock this
	// process keeps between its calls (statelock's sticky ownership) is
	// released while the directory is still there.
	t.Cleanup(statelock.ReleaseKept)
	state := filepath.Join(dir, "state.json")
	return locker.File(state, statelock.WithConfigRoot(filepath.Join(dir, "cfg")), statelock.WithWait(0)), state
}

func TestFileLockerLockTryLockInspect(t *testing.T) {
	l, _ := newFile(t)
	ctx := context.Background()
	st, err := l.Inspect(ctx)
	if err != nil || st.State != "free" || st.Holder != nil {
		t.Fatalf("fresh lock: %+v, %v; want free, no holder", st, err)
	}
	lease, err := l.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if lease.Token() == "" || lease.Err() != nil {
		t.Fatalf("token %q, err %v", lease.Token(), lease.Err())
	}
	select {
	case <-lease.Lost():
		t.Fatal("Lost closed while held")
	default:
	}
	if _, err := l.TryLock(ctx); !errors.Is(err, locker.ErrLocked) {
		t.Fatalf("TryLock on a held lock: %v; want ErrLocked", err)
	}
	st, err = l.Inspect(ctx)
	if err != nil || st.State != "held" || st.Holder == nil || st.Holder.Pid != int64(os.Getpid()) || st.Holder.Token != lease.Token() {
		t.Fatalf("held lock: %+v (holder %+v), %v; want held by us", st, st.Holder, err)
	}
	if err := lease.Unlock(); err != nil {
		t.Fatal(err)
	}
	st, err = l.Inspect(ctx)
	if err != nil || st.State != "free" {
		t.Fatalf("after Unlock: %+v, %v; want free", st, err)
	}
}

func TestFileLockerUpdate(t *testing.T) {
	l, state := newFile(t)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if err := l.Update(ctx, func(old []byte) ([]byte, error) { return append(old, 'x'), nil }); err != nil {
			t.Fatal(err)
		}
	}
	boom := errors.New("boom")
	calls := 0
	err := l.Update(ctx, func(old []byte) ([]byte, error) { calls++; return nil, boom })
	if !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("failing fn: err %v after %d calls; want boom after 1", err, calls)
	}
	got, err := os.ReadFile(state)
	if err != nil || string(got) != "xxx" {
		t.Fatalf("state %q, %v; want xxx", got, err)
	}
}
