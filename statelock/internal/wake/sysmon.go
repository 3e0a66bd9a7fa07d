package wake

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/exactfs/exactfs/internal/sys"
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
// processes' monitors woke 2,000 to 3,000 times a second for nothing
// (nanosleep in the bench's system call counts, 1.6 to 2.6 per contended
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

// sleepOn waits while *w holds cur, for at most d: until a futex wake
// (Ring, Done, Nudge and Interrupt send one), a change of the word, or
// stop (when given) is set. It sleeps in pieces of at most sleepPiece and
// passes through the scheduler between them (Breathe), for the other half
// of what Breathe is for: the runtime's monitor takes the P of a thread
// that has been in one system call for 10 ms, and drops its own sleep to
// 20 µs again. A waiter behind 15 others sleeps about 15 ms per
// acquisition on the disk: the bench counted 35 to 60 of the monitor's
// nanosleeps per increment at P=16. A piece's end costs a futex call and
// a yield (which wakes an idle P's thread): about 50 µs here, 1 % of a
// core at 5 ms pieces. So a sleep longer than piecesUpTo is one wait:
// the waiter's poll has grown because nothing changed for a while (the
// holder keeps the lock long), and one reset of the monitor per such
// sleep costs less than its pieces (a waiter behind a 10 s hold used
// 0.3-0.4 % of a core in one wait per poll, 1.2-2 % in pieces).
func sleepOn(w *uint32, cur uint32, d time.Duration, stop *atomic.Bool) {
	if d > piecesUpTo {
		if stop == nil || !stop.Load() {
			sys.FutexWait(w, cur, d)
		}
		return
	}
	end := time.Now().Add(d)
	for d > 0 && (stop == nil || !stop.Load()) {
		ranOut, err := sys.FutexWait(w, cur, min(d, sleepPiece))
		if err != nil || !ranOut || atomic.LoadUint32(w) != cur {
			return
		}
		if d = time.Until(end); d > 0 {
			Breathe()
		}
	}
}

// sleepPiece is the longest single futex wait of a sleep made in pieces:
// half the monitor's 10 ms.
const sleepPiece = 5 * time.Millisecond

// piecesUpTo is the longest sleep made in pieces (a variable for tests).
var piecesUpTo = DefaultPoll
