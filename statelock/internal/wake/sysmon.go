package wake

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Breathe passes through the Go scheduler once, at most every
// breatheEvery, so that a goroutine that loops on the lock never looks
// like one that has run for too long.
//
// Why: a lock cycle is system calls and waits in system calls (a futex
// wait, an fsync), and a goroutine that loops over them never parks, so
// its P's scheduling tick stands still. The runtime's monitor (sysmon)
// then finds the P in a system call on the same tick 10 ms later, takes
// it from the thread and hands it off, and, having done something, drops
// its own sleep back to 20 µs and climbs again: each of the looping
// processes' monitors woke about 3,000 times a second for nothing
// (nanosleep in the bench's system call counts, 2.6 per contended
// increment on tmpfs), and the thread whose P was taken went the slow way
// out of its next system call. One yield a few milliseconds resets the
// tick, and the monitor sleeps its 10 ms.
//
// It costs a trip through the scheduler (and the wake of an idle P,
// which finds nothing and sleeps again) once per breatheEvery, not per
// cycle.
func Breathe() {
	now := int64(time.Since(breatheBase)) + 1 // monotonic, never 0
	last := breathed.Load()
	if last != 0 && now-last < int64(breatheEvery) {
		return
	}
	if breathed.CompareAndSwap(last, now) {
		yield()
	}
}

// breatheEvery is well under the runtime's 10 ms preemption tick
// (forcePreemptNS), which the monitor measures from its own wake-ups.
const breatheEvery = 2 * time.Millisecond

var (
	yield       = runtime.Gosched // tests count it
	breatheBase = time.Now()
	breathed    atomic.Int64 // when Breathe last yielded, since breatheBase
)
