//go:build linux

package statelock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/testfs"
)

// On a filesystem without rename flags (NFS and several FUSE filesystems;
// here bindfs, which answers renameat2 with flags with EINVAL) the lock
// still works: records are created in place and released tombstones are
// reused. What needs an exact unlink (a dead owner's record, a crashed
// claim) cannot be removed safely there: it stays byte-identical and the
// error says so and names the way out (the reference's scenarios 35, 38,
// 40).
func TestLockWithoutRenameFlags(t *testing.T) {
	mnt := testfs.BindfsNoRenameFlags(t)
	// Cleanups run last-registered first: the descriptors this process
	// parked on the mount (park.go) are closed before testfs unmounts it,
	// or the unmount finds it busy whenever the test outruns the policy's ParkIdle.
	t.Cleanup(closeParked)
	config := filepath.Join(t.TempDir(), "config")

	t.Run("lock cycle and Update", func(t *testing.T) {
		e := newEnvAt(t, filepath.Join(mnt, "cycle"), config)
		for i := 0; i < 3; i++ {
			h, err := Lock(context.Background(), e.state, e.opts()...)
			if err != nil {
				t.Fatalf("Lock %d: %v", i, err)
			}
			if err := h.Unlock(); err != nil {
				t.Fatalf("Unlock %d: %v", i, err)
			}
		}
		for i := 1; i <= 5; i++ {
			err := Update(context.Background(), e.state, func(old []byte) ([]byte, error) {
				n, _ := strconv.Atoi(string(old))
				return []byte(strconv.Itoa(n + 1)), nil
			}, e.opts()...)
			if err != nil {
				t.Fatalf("Update %d: %v", i, err)
			}
		}
		if got := string(mustRead(t, e.state)); got != "5" {
			t.Fatalf("counter %q after 5 updates", got)
		}
		assertReleased(t, e)
	})

	t.Run("dead owner's record is kept", func(t *testing.T) {
		e := newEnvAt(t, filepath.Join(mnt, "dead"), config)
		before := e.tsRecord(t, deadPid(t), e.host.ID, 0)
		_, err := TryLock(e.state, e.opts()...)
		if err == nil {
			t.Fatal("TryLock removed a dead record without exact unlink")
		}
		if exactfs.CodeOf(inner(err)) != exactfs.CodeAtomicUnavailable || !strings.Contains(err.Error(), "by hand") {
			t.Fatalf("TryLock over a dead record: %v, want atomic_unavailable saying it must be removed by hand", err)
		}
		before.assertSame(t, e.lock)
	})

	t.Run("crashed claim is kept", func(t *testing.T) {
		e := newEnvAt(t, filepath.Join(mnt, "claim"), config)
		plantCrashedClaim(t, e, nil)
		side := stateOf(t, e.sidecar)
		_, err := TryLock(e.state, e.opts()...)
		if err == nil {
			t.Fatal("TryLock took the lock through a crashed claim it could not remove exactly")
		}
		if exactfs.CodeOf(inner(err)) != exactfs.CodeAtomicUnavailable || !strings.Contains(err.Error(), "by hand") {
			t.Fatalf("TryLock with a crashed claim: %v, want atomic_unavailable saying it must be removed by hand", err)
		}
		if fi, err := os.Lstat(e.claim); err != nil || !fi.IsDir() {
			t.Fatalf("the crashed claim directory is gone: %v %v", fi, err)
		}
		// The dead sidecar may have been entombed in place (SPEC §4.3 does
		// that before the directory goes): the same inode, and a claim
		// directory beside a tombstone is still a crashed claim.
		if now := stateOf(t, e.sidecar); now.ino != side.ino {
			t.Fatalf("the sidecar was replaced: inode %d -> %d", side.ino, now.ino)
		} else if rec, err := ParseRecord(now.data); string(now.data) != string(side.data) && (err != nil || !rec.Released) {
			t.Fatalf("the sidecar now holds %q", now.data)
		}
	})
}

// inner is the innermost *exactfs.Error under err (the cause a lock
// error wraps), or err.
func inner(err error) error {
	for {
		var e *exactfs.Error
		if !errors.As(err, &e) || e.Err == nil {
			return err
		}
		var below *exactfs.Error
		if !errors.As(e.Err, &below) {
			return e
		}
		err = e.Err
	}
}

// assertReleased checks the steady state after a completed cycle: F.lock
// a released tombstone, no claim directory.
func assertReleased(t *testing.T, e *testEnv) {
	t.Helper()
	rec, err := ParseRecord(mustRead(t, e.lock))
	if err != nil || !rec.Released {
		t.Fatalf("F.lock after the cycle: %+v %v", rec, err)
	}
	if _, err := os.Lstat(e.claim); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("claim directory after the cycle: %v", err)
	}
}
