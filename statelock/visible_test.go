//go:build (linux && !exactfs_portable) || windows

package statelock

import (
	"context"
	"os"
	"testing"

	"github.com/exactfs/exactfs/internal/hook"
)

// TestNoKernelClaimWhereLockUnseen: where the holder's kernel lock is not
// seen from another open of F.lock (hook.LockVisibleHidden plays a volume
// that keeps locks per handle, or an SMB handle that reconnected without
// them), the record claims none (no kernel_lock on Windows, no pid_ns,
// pidfd_ino, ofd_slot or boot id on Linux): a judge would read the free
// range as the holder gone. The holder is then judged by its record, by
// pid, and kept. Where the lock is seen, the same Lock claims it. Fails on
// the code before lockOrPlain asked exactfs.LockVisible: the record
// claimed the lock whatever another open saw.
func TestNoKernelClaimWhereLockUnseen(t *testing.T) {
	e := newEnv(t)
	restore := hook.Set(hook.LockVisibleHidden, func(string) {})
	h, err := Lock(context.Background(), e.state, e.opts()...)
	restore()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(e.lock)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ParseRecord(b)
	if err != nil || rec.Kernel() {
		t.Fatalf("the held record %s (%v) claims a kernel lock no other open sees", b, err)
	}
	st, err := Inspect(e.state, e.opts()...)
	if err != nil || st.State != StateHeld || st.Holder == nil || st.Holder.Kernel {
		t.Fatalf("Inspect of the held lock: %+v %+v, %v; want held, by its record", st, st.Holder, err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}

	e2 := newEnv(t)
	h, err = Lock(context.Background(), e2.state, e2.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Unlock()
	if rec, err := ParseRecord(mustRead(t, e2.lock)); err != nil || !rec.Kernel() {
		t.Fatalf("with the lock seen, the held record %+v (%v) claims none", rec, err)
	}
}
