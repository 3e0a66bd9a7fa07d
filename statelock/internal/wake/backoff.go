package wake

import "time"

// Backoff between acquisition attempts: 5 ms, doubling, capped at 100 ms.
// A waiter on Linux also wakes as soon as the lock record changes
// (Watch), so the cap bounds only how late a change that produced no
// event is noticed, such as the death of a holder that holds no kernel
// lock of ours (a TypeScript peer): its lock is reclaimed by the first
// attempt after the death, at most one step later.
const (
	BackoffMin = 5 * time.Millisecond
	BackoffMax = 100 * time.Millisecond
)

// Backoff yields the successive sleeps of one wait: from Min, doubling, up
// to Max (BackoffMin and BackoffMax when both are left zero).
type Backoff struct {
	Min, Max time.Duration
	next     time.Duration
}

// Step returns the next sleep, never more than remaining.
func (b *Backoff) Step(remaining time.Duration) time.Duration {
	lo, hi := b.Min, b.Max
	if lo == 0 {
		lo, hi = BackoffMin, BackoffMax
	}
	if b.next == 0 {
		b.next = lo
	}
	d := b.next
	b.next = min(2*b.next, hi)
	return max(0, min(d, remaining))
}

// Reset starts over from the shortest sleep: the holder changed, so the
// lock is likely to be free soon again.
func (b *Backoff) Reset() { b.next = 0 }
