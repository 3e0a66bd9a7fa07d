package wake

import (
	"testing"
	"time"
)

// countYields counts Breathe's yields for the rest of the test, from a
// reset: the next Breathe yields.
func countYields(t *testing.T) *int {
	n, was := new(int), yield
	t.Cleanup(func() { yield = was })
	yield = func() { *n++ }
	breathed.Store(0)
	return n
}

// Breathe yields at most once per breatheEvery, however often it is
// called, and again once that time has passed.
func TestBreatheYieldsOncePerWindow(t *testing.T) {
	yields := countYields(t)
	start := time.Now()
	for range 10000 {
		Breathe()
	}
	// The loop takes microseconds; a slow machine may cross a window or
	// a few, never one per call.
	if most := 1 + int(time.Since(start)/breatheEvery); *yields < 1 || *yields > most {
		t.Fatalf("10000 calls yielded %d times, want 1 to %d", *yields, most)
	}
	before := *yields
	time.Sleep(breatheEvery + time.Millisecond)
	Breathe()
	if *yields != before+1 {
		t.Fatalf("a call %v after the last yield did not yield (%d yields)", breatheEvery+time.Millisecond, *yields-before)
	}
}
