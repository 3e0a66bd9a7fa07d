package wake

import (
	"testing"
	"time"
)

// Breathe yields at most once per breatheEvery, however often it is
// called, and again once that time has passed.
func TestBreatheYieldsOncePerWindow(t *testing.T) {
	n := 0
	defer func(y func()) { yield = y }(yield)
	yield = func() { n++ }
	breathed.Store(0)
	start := time.Now()
	for range 10000 {
		Breathe()
	}
	// The loop takes microseconds; a slow machine may cross a window or
	// a few, never one per call.
	if most := 1 + int(time.Since(start)/breatheEvery); n < 1 || n > most {
		t.Fatalf("10000 calls yielded %d times, want 1 to %d", n, most)
	}
	before := n
	time.Sleep(breatheEvery + time.Millisecond)
	Breathe()
	if n != before+1 {
		t.Fatalf("a call %v after the last yield did not yield (%d yields)", breatheEvery+time.Millisecond, n-before)
	}
}
