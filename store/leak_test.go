//go:build unix

package store

import (
	"context"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A Lease dropped without Release is reported, naming its lock file, and
// then released as Release would: the record says released, the
// descriptor is closed, the heartbeat goroutine ends, and the next taker
// gets the lease at once. Fails without the cleanup: no report, and the
// heartbeat keeps the lease held until the process exits (the second
// acquire runs out of its wait budget).
func TestLeaseLeakReportedAndReleased(t *testing.T) {
	dir := locksDir(t)
	got := make(chan string, 4)
	old := leakReport
	leakReport = func(msg string) { got <- msg }
	t.Cleanup(func() { leakReport = old })
	before := runtime.NumGoroutine()

	var fd uintptr
	var path string
	func() {
		l, err := AcquireLease(context.Background(), dir, "job", HeartbeatInterval(5*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		fd, path = l.f.Fd(), l.Path()
	}()
	var msg string
	deadline := time.After(10 * time.Second)
wait:
	for {
		runtime.GC()
		select {
		case msg = <-got:
			break wait
		case <-deadline:
			t.Fatal("no leak report within 10s of dropping the Lease")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if !strings.Contains(msg, path) || !strings.Contains(msg, "without a call to Release") {
		t.Errorf("report %q does not name %s and the missing Release", msg, path)
	}
	// The release runs on a goroutine of its own: wait for the record.
	var r LeaseRecord
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var err error
		if r, err = ParseLeaseRecord(readFile(t, path)); err == nil && r.Released {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the dropped lease's record was not released: %+v", r)
		}
	}
	var st syscall.Stat_t
	for end := time.Now().Add(10 * time.Second); syscall.Fstat(int(fd), &st) != syscall.EBADF; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the dropped lease's descriptor %d is still open", fd)
		}
	}
	for end := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > before; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d goroutines, %d before the lease: its heartbeat did not end", runtime.NumGoroutine(), before)
		}
	}
	l2, err := AcquireLease(context.Background(), dir, "job", WaitBudget(200*time.Millisecond))
	if err != nil {
		t.Fatalf("the next taker did not get the dropped lease: %v", err)
	}
	l2.Release()
}

// A released Lease is not reported when it is collected.
func TestLeaseReleasedNotReported(t *testing.T) {
	dir := locksDir(t)
	got := make(chan string, 4)
	old := leakReport
	leakReport = func(msg string) { got <- msg }
	t.Cleanup(func() { leakReport = old })
	func() {
		l, err := AcquireLease(context.Background(), dir, "job")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
	}()
	for range 5 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case msg := <-got:
		t.Fatalf("a released Lease was reported as leaked: %s", msg)
	default:
	}
}
