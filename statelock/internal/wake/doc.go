// Package wake is the waiting machinery of the Go cohort (SPEC §4.8.2): the
// mailbox through which a Go waiter publishes the exact owner record it
// wants written into F.lock, and accepts a direct hand-off from the live
// owner, with the futex that wakes it. It is policy-free: it knows nothing
// of F.lock, records or judges; statelock decides when to seat a waiter and
// when to grant, and proves everything about F.lock itself. What this
// package guarantees is the mailbox's own part of the proof:
//
//   - Trust (SPEC §4.2): a mailbox is used only when it is a regular file
//     owned by our effective uid, with one link, mode 0600 and exactly Size
//     bytes, on a filesystem whose kernel answers the lease probe (a local
//     one: a file shared between hosts cannot carry a shared mapping's
//     stores between them). Anything else is never written (not even
//     mapped) and Open says why; the caller then waits the reference way.
//     It is created whole: truncated to Size under a private staging name
//     and given its name by a no-replace rename (exactfs.Dir.CreateWith).
//   - Seats: a waiter owns seat i while its descriptor holds an OFD write
//     lock on byte i of the mailbox; the kernel drops it when the waiter
//     dies, so a dead waiter's seat is free at once and never granted
//     (Grant asks the lock before anything else).
//   - The state word of a seat (idle, WAITING, GRANTING, GRANTED in its low
//     two bits, a sequence number above them) changes only by
//     compare-and-swap, and every change bumps the sequence, so no
//     transition can succeed against a state it did not see (no ABA). A
//     granter holds an OFD write lock on byte GrantLockBase+i for as long
//     as the seat is GRANTING under it; a GRANTING seat whose grant byte
//     nobody holds has lost its granter (Recover puts it back to WAITING).
//   - The record bytes are written by the waiter while its seat is idle,
//     before it stores WAITING, and read by the granter once, right after
//     its CAS to GRANTING: the bytes a grant writes are the bytes the
//     waiter published, never those of a later occupant of the seat.
//
// Beside the seats, the header carries what statelock needs for durability
// after an early release (sync.go: the promise of a granter's directory
// fsync to its grantee; pair.go: the count of grants and the highest tag
// a directory fsync covers, by which a granter times its fsync to cover
// its grantee's rename too). They are hints between cooperating
// processes of this version: a missing or stale word costs a wait of
// bounded length or an fsync of one's own, never a guarantee.
//
// Fairness: Grant picks the WAITING seat with the smallest ticket (the
// waiter's arrival on the host's monotonic clock), so Go waiters are served
// in arrival order.
//
// Beside the mailbox, the package has the waiting of a waiter that is not
// seated (behind a TypeScript holder, an older exactfs, a busy claim):
// Watch, the inotify watch of F.lock's inode that wakes it early; Backoff,
// the bounded sleeps between its attempts (5 ms doubling to 100 ms, SPEC
// §4.4); Queue, the OFD ticket queue that orders such waiters by arrival
// (Now, the host's monotonic clock, also the mailbox's tickets); and
// Policy, the queue with the release's decision of when its close wakes
// the first waiter (Linger). Their knobs are fields and arguments
// (Backoff.Min, Backoff.Max, NewWatch's off, Queue.Trust and Barge,
// Policy.ParkIdle and HandoffDelay, and the switches and idle times of
// statelock's hand-off, sticky ownership and look cache in Policy), not
// package variables, so tests run in parallel. The caller owns the descriptors a Queue is asked through:
// which inode they are open on is its proof, not this package's.
//
// # What wakes a waiter
//
// Every sleep is bounded, so a lost wake costs one poll, never the lock:
//   - A seated Go waiter sleeps on its seat's state word (Seat.Sleep, a
//     futex wait of at most Policy.SeatPoll, DefaultPoll = 20 ms, made in
//     pieces of at most 5 ms when that short: sleepOn, for the Go
//     runtime's monitor). The
//     granter wakes it once GRANTED is stored; Nudge wakes the oldest
//     WAITING seat after a release the reference way, so that it attempts
//     at once; Seat.Interrupt, when its context ends, and, once a wake
//     brought no grant, when the holder it waits behind exits (WatchExit,
//     a pidfd the runtime's poller waits on). A granter that died
//     (Seat.Recover), or a release by an older exactfs or by TypeScript,
//     costs at most the poll.
//   - A sticky owner sleeps on the mailbox's bell (BellWait) for the rest
//     of its idle time; a waiter that takes a seat rings it (Ring, a system
//     call only when an owner is counted asleep), and the owner hands over
//     at once.
//   - A waiter without a seat (behind a TypeScript holder, an older
//     exactfs, or with the cohort off) sleeps in Watch.Wait (inotify on
//     F.lock's inode; kqueue on macOS; a timed sleep elsewhere) for at most
//     its Backoff step, 5 ms doubling to 100 ms. The first in the Queue is
//     woken by the releaser's close of its written descriptor
//     (IN_CLOSE_WRITE), which Policy's Linger delays while the releaser is
//     likely to lock again; the one behind it by the close of the ticket
//     ahead (IN_CLOSE_NOWRITE); all of them by a reclaim (the inode moved
//     or gone). statelock drops a wake after which nothing it observes has
//     changed.
//   - A caller that finds the transition claim busy sleeps
//     Policy.ClaimRetryMin doubling to ClaimRetryMax (a claim lasts a few
//     system calls); once the claim has stayed busy for a second, its
//     sleeps grow to Backoff's maximum, as behind a holder.
package wake
