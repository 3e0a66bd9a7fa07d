package statelock

import "time"

// Backoff between acquisition attempts: 5 ms, doubling, capped at 100 ms.
// A waiter on Linux also wakes as soon as the lock record changes
// (wait.go), so the cap bounds only how late a change that produced no
// event is noticed, such as the death of a holder that holds no kernel
// lock of ours (a TypeScript peer): its lock is reclaimed by the first
// attempt after the death, at most one step later.
const (
	backoffMin = 5 * time.Millisecond
	backoffMax = 100 * time.Millisecond
)

// backoff yields the successive sleeps of one wait: from min, doubling, up
// to max (backoffMin and backoffMax when left zero).
type backoff struct{ next, min, max time.Duration }

// step returns the next sleep, never more than remaining.
func (b *backoff) step(remaining time.Duration) time.Duration {
	lo, hi := b.min, b.max
	if lo == 0 {
		lo, hi = backoffMin, backoffMax
	}
	if b.next == 0 {
		b.next = lo
	}
	d := b.next
	b.next = min(2*b.next, hi)
	return max(0, min(d, remaining))
}

// reset starts over from the shortest sleep: the holder changed, so the
// lock is likely to be free soon again.
func (b *backoff) reset() { b.next = 0 }
