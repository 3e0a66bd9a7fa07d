package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
)

// TestLeaseRecordTooLarge: a 1 GiB sparse lease record is refused at once
// (record_too_large, kept), without a byte of it read: the capture's read
// hook never fires for it. On 7b17545 it is read whole on every poll.
func TestLeaseRecordTooLarge(t *testing.T) {
	dir := locksDir(t)
	p := filepath.Join(dir, "job.lock")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	reads := 0
	defer hook.Set(hook.CaptureRead, func(got string) {
		if got == p {
			reads++
		}
	})()
	var l *Lease
	within(t, 10*time.Second, func() {
		l, err = AcquireLease(context.Background(), dir, "job", WaitBudget(time.Second))
	})
	if err == nil {
		l.Release()
		t.Fatal("a lease was taken over a 1 GiB record")
	}
	if exactfs.CodeOf(err) != exactfs.CodeRecordTooLarge {
		t.Fatalf("err %v, want record_too_large", err)
	}
	if reads != 0 {
		t.Fatalf("the 1 GiB record was read %d times", reads)
	}
	if fi, err := os.Stat(p); err != nil || fi.Size() != 1<<30 {
		t.Fatalf("the record was not kept: %v", err)
	}
}
