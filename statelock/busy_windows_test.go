package statelock

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"golang.org/x/sys/windows"
)

// Sharing violations are contention on Windows (busy.go): a handle that
// keeps F.lock from being read or removed (a scanner, an indexer, a
// reader that opened it without FILE_SHARE_DELETE) makes a lock call
// wait, never fail, and the call takes the lock once the handle is gone.

// testBusyWaitedOut puts rec at F.lock, lets open take a handle on it
// that keeps it busy, and checks that TryLock reports contention and
// changes nothing, and that Lock, waiting, takes the lock once the handle
// closes (300 ms later).
func testBusyWaitedOut(t *testing.T, rec *Record, open func(t *testing.T, p string) (close func())) {
	e := newEnv(t)
	rec.HostID = e.host.ID // this host's: a dead pid here is dead
	writeRecord(t, e, rec)
	before := lockIdentity(t, e)
	closeIt := open(t, e.lock)
	_, err := TryLock(e.state, e.opts()...)
	if !errors.Is(err, ErrLocked) {
		closeIt()
		t.Fatalf("TryLock while another handle keeps F.lock busy: %v, want ErrLocked (contention)", err)
	}
	t.Logf("TryLock: %v", err)
	// (A handle that shares nothing keeps F.lock from being read, so what
	// is compared is the identity: the same file, size and mtime.)
	if after := lockIdentity(t, e); after != before {
		closeIt()
		t.Fatalf("F.lock changed while busy: %v, was %v", after, before)
	}
	released := make(chan struct{})
	go func() {
		time.Sleep(300 * time.Millisecond)
		closeIt()
		close(released)
	}()
	h, err := Lock(context.Background(), e.state, e.opts(WithWait(30*time.Second))...)
	<-released
	if err != nil {
		t.Fatalf("Lock once the handle closes: %v", err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// TestWindowsDeadRecordHeldWithoutShareDeleteIsContention: a dead
// record that a reader holds open without FILE_SHARE_DELETE (as Go's
// os.OpenFile does) cannot be removed until the reader lets go: the
// removal's sharing violation is waited out. Fails without busy.go: the
// lock call failed with EBUSY.
func TestWindowsDeadRecordHeldWithoutShareDeleteIsContention(t *testing.T) {
	rec := &Record{Pid: 2147483644, StartTime: "unknown", Token: exactfs.NewUUID()}
	testBusyWaitedOut(t, rec, func(t *testing.T, p string) func() {
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		return func() { f.Close() }
	})
}

// TestWindowsRecordOpenedExclusivelyIsContention: a record a handle
// holds with no sharing at all (share mode 0) cannot even be read: the
// open's sharing violation is contention, for a tombstone (the reuse
// path) as for a dead record. Fails without busy.go: the lock call failed
// with EBUSY.
func TestWindowsRecordOpenedExclusivelyIsContention(t *testing.T) {
	for name, rec := range map[string]*Record{
		"tombstone": tombstone(exactfs.NewUUID(), "h"),
		"dead":      {Pid: 2147483644, StartTime: "unknown", Token: exactfs.NewUUID()},
	} {
		t.Run(name, func(t *testing.T) {
			testBusyWaitedOut(t, rec, func(t *testing.T, p string) func() {
				name, err := windows.UTF16PtrFromString(p)
				if err != nil {
					t.Fatal(err)
				}
				h, err := windows.CreateFile(name, windows.GENERIC_READ, 0, nil, windows.OPEN_EXISTING, windows.FILE_ATTRIBUTE_NORMAL, 0)
				if err != nil {
					t.Fatal(err)
				}
				return func() { windows.CloseHandle(h) }
			})
		})
	}
}

// lockIdentity is F.lock's identity as Lstat reads it (no read access is
// asked, so a handle that shares nothing does not keep it from us).
func lockIdentity(t *testing.T, e *testEnv) exactfs.Identity {
	t.Helper()
	fi, err := exactfs.Lstat(e.lock)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(exactfs.Identity)
}
