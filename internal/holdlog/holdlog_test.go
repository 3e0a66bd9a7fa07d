package holdlog

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// wineVersion reports the Wine version when the test runs under Wine, ""
// otherwise (set by a Windows test file; never Wine elsewhere).
var wineVersion = func() string { return "" }

func writeLog(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name      string
		logs      []string
		allowOpen bool
		wantErr   string // substring; "" = no error
		overlaps  int
		open      int
		maxConc   int
	}{
		{name: "serial", logs: []string{"enter 1 10\nexit 1 20\nenter 2 30\nexit 2 40\n"}, maxConc: 1},
		{name: "touching", logs: []string{"enter 1 10\nexit 1 20\n", "enter 2 20\nexit 2 30\n"}, maxConc: 1},
		{name: "overlap across files", logs: []string{"enter 1 10\nexit 1 25\n", "enter 2 20\nexit 2 30\n"}, wantErr: "overlap: pid 1 [10, 25]", overlaps: 1, maxConc: 2},
		{name: "nested", logs: []string{"enter 1 10\nexit 1 100\n", "enter 2 20\nexit 2 30\nenter 2 40\nexit 2 50\n"}, wantErr: "overlap", overlaps: 2, maxConc: 2},
		{name: "malformed", logs: []string{"enter 1 10\nexit 1\n"}, wantErr: "malformed line", open: 1},
		{name: "bad word", logs: []string{"begin 1 10\n"}, wantErr: "malformed line"},
		{name: "exit without enter", logs: []string{"exit 1 10\n"}, wantErr: "without an enter"},
		{name: "exit before enter", logs: []string{"enter 1 10\nexit 1 5\n"}, wantErr: "precedes its enter"},
		{name: "open", logs: []string{"enter 1 10\n", "enter 2 20\nexit 2 30\n"}, wantErr: "never exited", open: 1, maxConc: 1},
		{name: "open allowed", logs: []string{"enter 1 10\n", "enter 2 20\nexit 2 30\n"}, allowOpen: true, open: 1, maxConc: 1},
		{name: "reentry", logs: []string{"enter 1 10\nenter 1 20\nexit 1 30\n"}, wantErr: "entered again", open: 1, maxConc: 1},
		{name: "reentry allowed", logs: []string{"enter 1 10\nenter 1 20\nexit 1 30\n"}, allowOpen: true, open: 1, maxConc: 1},
		{name: "blank lines", logs: []string{"\nenter 1 10\n\nexit 1 20\n"}, maxConc: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var paths []string
			for i, text := range tc.logs {
				paths = append(paths, writeLog(t, dir, string(rune('a'+i))+".log", text))
			}
			r, err := Check(tc.allowOpen, paths...)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
			if len(r.Overlaps) != tc.overlaps || len(r.Open) != tc.open || r.MaxConcurrency != tc.maxConc {
				t.Fatalf("report %v, want %d overlaps, %d open, max concurrency %d", r, tc.overlaps, tc.open, tc.maxConc)
			}
		})
	}
}

// TestLogAndCheck writes real events from concurrent writers sharing one
// file, first under a mutex (no overlap) and then without one (overlap
// found), so the checker is shown to fail when exclusion breaks.
func TestLogAndCheck(t *testing.T) {
	run := func(t *testing.T, lock bool) error {
		path := filepath.Join(t.TempDir(), "hold.log")
		var mu sync.Mutex
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(pid int) {
				defer wg.Done()
				l, err := Open(path)
				if err != nil {
					t.Error(err)
					return
				}
				defer l.Close()
				l.pid = pid // one fake pid per writer: pairs are per pid
				for i := 0; i < 20; i++ {
					if lock {
						mu.Lock()
					}
					if err := l.Enter(); err != nil {
						t.Error(err)
					}
					time.Sleep(200 * time.Microsecond)
					if err := l.Exit(); err != nil {
						t.Error(err)
					}
					if lock {
						mu.Unlock()
					}
				}
			}(1000 + w)
		}
		wg.Wait()
		r, err := Check(false, path)
		if len(r.Intervals) != 80 {
			t.Errorf("%d intervals, want 80 (%v)", len(r.Intervals), err)
		}
		return err
	}
	t.Run("mutex", func(t *testing.T) {
		if err := run(t, true); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("no lock", func(t *testing.T) {
		if v := wineVersion(); v != "" {
			t.Skipf("under Wine %s, whose appends through separate handles race (measured: 4 writers lose about 1-8%% of their lines), so unguarded writers' lines get lost; real Windows is expected to append whole lines (to be verified there)", v)
		}
		if err := run(t, false); err == nil || !strings.Contains(err.Error(), "overlap") {
			t.Fatalf("unguarded writers: error %v, want overlaps", err)
		}
	})
}

// Now never goes back and keeps the pace of the process's own clock. It
// is read until it has advanced by 100 ms, and the time the process's clock
// saw pass meanwhile must agree within a factor of two (and a tick). The
// two are different clocks: on Windows, Now is the performance counter and
// Go's sleeps are measured by the interrupt time, which moves in ticks, so
// "Now advanced by at least a 2 ms sleep" (this test until 2026-12-05)
// failed under Wine with 1.6 ms.
func TestNowMonotonic(t *testing.T) {
	const want = 100 * time.Millisecond
	start := time.Now()
	a, err := Now()
	if err != nil {
		t.Fatal(err)
	}
	last := a
	for time.Duration(last-a) < want {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("Now advanced by %v in 5s", time.Duration(last-a))
		}
		time.Sleep(time.Millisecond)
		b, err := Now()
		if err != nil {
			t.Fatal(err)
		}
		if b < last {
			t.Fatalf("Now went back by %v", time.Duration(last-b))
		}
		last = b
	}
	d, el := time.Duration(last-a), time.Since(start)
	if el < d/2-16*time.Millisecond || el > 2*d+16*time.Millisecond {
		t.Fatalf("Now advanced by %v while the process's clock saw %v pass", d, el)
	}
}
