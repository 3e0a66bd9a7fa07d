package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/exactfs/exactfs/internal/hook"
)

// wantNoClaimWhereUnseen: where the lease's attestation is not seen from
// another open of the lock file (hook.LockVisibleHidden plays such a
// volume), the record must not claim it, or a contender would read a free
// range as a holder gone; a contender then keeps the lease by its expiry.
// With the volume's true answer, the same acquire claims it.
func wantNoClaimWhereUnseen(t *testing.T) {
	ctx := context.Background()
	locks := filepath.Join(t.TempDir(), "locks")
	restore := hook.Set(hook.LockVisibleHidden, func(string) {})
	l, err := AcquireLease(ctx, locks, "job", CreateLocksDir())
	restore()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(locks, "job.lock"))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ParseLeaseRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	if rec.KernelLock || rec.Dev != 0 || rec.Ino != 0 {
		t.Fatalf("the record claims an attestation no other open sees: %s", b)
	}
	_, err = AcquireLease(ctx, locks, "job", WaitBudget(0))
	if !errors.Is(err, ErrLeaseBusy) || !strings.Contains(err.Error(), "lease expires in") {
		t.Fatalf("a contender while the holder lives: %v, want lease_busy by the expiry rule", err)
	}
	l.Release()
	l, err = AcquireLease(ctx, locks, "job")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if b, _ = os.ReadFile(filepath.Join(locks, "job.lock")); !strings.Contains(string(b), `"kernelLock":true`) {
		t.Fatalf("with the lock visible the record does not claim it: %s", b)
	}
}
