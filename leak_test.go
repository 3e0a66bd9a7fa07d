//go:build unix

package exactfs

import (
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// awaitLeak replaces the leak report, runs drop (which must make a value
// unreachable), and collects garbage until the report arrives.
func awaitLeak(t *testing.T, drop func()) string {
	t.Helper()
	got := make(chan string, 4)
	old := leakReport
	leakReport = func(msg string) { got <- msg }
	t.Cleanup(func() { leakReport = old })
	drop()
	deadline := time.After(10 * time.Second)
	for {
		runtime.GC()
		select {
		case msg := <-got:
			return msg
		case <-deadline:
			t.Fatal("no leak report within 10s of dropping the value")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// A Dir dropped without Close is reported, naming its directory, and its
// descriptor is closed (fails on a Dir without a cleanup: no report, and
// the descriptor stays open).
func TestDirLeakReported(t *testing.T) {
	dir := t.TempDir()
	var fd int
	msg := awaitLeak(t, func() {
		d, err := OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		fd = d.fd
	})
	if !strings.Contains(msg, dir) || !strings.Contains(msg, "without a call to Close") {
		t.Errorf("report %q does not name %s and the missing Close", msg, dir)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != syscall.EBADF {
		t.Errorf("fstat of the dropped Dir's descriptor %d: %v, want EBADF (the descriptor leaked)", fd, err)
	}
}

// A closed Dir is not reported when it is collected: Close cancels the
// cleanup, so it can never close a number the kernel has given to another
// file since.
func TestDirClosedNotReported(t *testing.T) {
	dir := t.TempDir()
	got := make(chan string, 4)
	old := leakReport
	leakReport = func(msg string) { got <- msg }
	t.Cleanup(func() { leakReport = old })
	func() {
		d, err := OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		d.Close()
	}()
	for range 5 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case msg := <-got:
		t.Fatalf("a closed Dir was reported as leaked: %s", msg)
	default:
	}
}
