package wake

import "time"

// Policy is the waiting policy of the reference path, the one a waiter
// that is not seated in the mailbox meets: the Queue it joins, and when a
// release wakes its first waiter.
//
// That waiter is woken by the close of the releaser's written descriptor
// of the record (IN_CLOSE_WRITE, watch.go). A releaser that takes the lock
// again at once, as a process that updates in a loop does, would wake it
// only to find the lock taken again, and while it looks it takes the
// transition claim from under the process that is re-acquiring. So the
// releaser keeps the descriptor open (parked) for a while, and Linger
// decides how long:
//   - a waiter has waited longer than Barge, or the releaser is away (it
//     will not be back sooner than HandoffDelay): close now, its turn;
//   - waiters younger than that: HandoffDelay; if the releaser has not
//     taken the lock back by then, the close wakes the first waiter a
//     moment later than it would have;
//   - no waiter (or a new holder already, whose release wakes them):
//     ParkIdle.
//
// The knobs are fields, not package variables, so tests that change them
// run in parallel. Take NewPolicy's and change what the caller needs.
//
// Beside them, the cohort's (SPEC §4.8) knobs of the same kind:
//   - SeatPoll bounds a seated waiter's sleep (DefaultPoll): a lost wake, a
//     granter that died, or a holder that released without nudging (an
//     older exactfs, a TypeScript reclaimer) costs at most this;
//   - SyncWait bounds a grantee's wait for the directory fsync its granter
//     promised (sync.go): a granter killed before it kept its promise
//     costs a reader at most this, then it fsyncs itself;
//   - PairWait bounds how long an early-released Update waits for its
//     grantee's rename before its own directory fsync (pair.go): a grantee
//     that holds on, or an older build, costs the granter's return at
//     most this;
//   - ReferenceRecent, Yield and YieldEvery are the fairness towards
//     reference contenders (TypeScript peers, older exactfs on the
//     reference path): one that polls rewrites the claim's sidecar at each
//     attempt (its record in, its tombstone out), which Go cohort members
//     never do (§4.8.4), so a sidecar written within ReferenceRecent means
//     one is polling; its backoff grows to 100 ms between attempts, so Go
//     takers stay off a tombstone for Yield to let its next attempt find
//     it. Yields are spaced by YieldEvery (from the end of the last one
//     asked), so that a reference contender gets a turn at least that
//     often beside Go waiters that would otherwise hand the lock on among
//     themselves, without Go waiting out a yield after every cycle.
//
// And ClaimRetryMin and ClaimRetryMax bound the sleeps while the transition
// claim is busy. A claim is held only for a few file operations, so these
// are much shorter than the waits for a lock holder (Backoff's).
//
// The switches and idle times of the speed machinery the lock keeps around
// this package (statelock's sticky.go, handoff.go and ofd_linux.go):
//   - Watch: a waiter arms a watch (NewWatch); off, every wait is a timed
//     sleep, as where the kernel gives no inotify or kqueue;
//   - Handoff: the cohort's direct hand-off (SPEC §4.8.2); off, a waiter is
//     never seated in the Mailbox and a release never grants, as an older
//     exactfs behaves;
//   - Sticky and StickyIdle: sticky ownership (SPEC §4.8.3), and the
//     longest a re-locking process keeps a released record;
//   - MailboxIdle: how long a mapped Mailbox nobody uses stays mapped;
//   - LookIdle: how long the descriptor new callers share to look at a
//     record stays open unused.
//
// An idle time governs memory the process keeps beyond the call (a kept
// record, a mapped mailbox, a look descriptor, a parked descriptor); each
// such entry takes it from the call that armed the entry's time, as
// ParkIdle is given to Park by the release that parks (the user of the
// memory documents which call that is).
type Policy struct {
	Queue
	ParkIdle     time.Duration // how long an unused released descriptor is kept
	HandoffDelay time.Duration // how long a young waiter waits for a releaser that may take the lock back

	SeatPoll        time.Duration // the longest first sleep of a seated waiter
	SyncWait        time.Duration // how long a grantee waits for its granter's promised fsync
	PairWait        time.Duration // how long a granter waits for its grantee's rename before its directory fsync (0: never)
	ReferenceRecent time.Duration // a sidecar written this recently: a reference contender polls
	Yield           time.Duration // how long Go takers stay off a tombstone for it
	YieldEvery      time.Duration // the least time between two yields

	ClaimRetryMin, ClaimRetryMax time.Duration // the sleeps while the transition claim is busy

	Watch       bool          // a waiter is woken by a watch, not only by its sleeps ending
	Handoff     bool          // the direct hand-off: waiters seat in the mailbox, releases grant
	Sticky      bool          // a re-locking process may keep a released record
	StickyIdle  time.Duration // the longest a released record is kept
	MailboxIdle time.Duration // how long an unused mailbox stays mapped
	LookIdle    time.Duration // how long an unused look descriptor stays open
}

// Defaults of Policy's own knobs.
const (
	DefaultParkIdle        = time.Second
	DefaultHandoffDelay    = 500 * time.Microsecond
	DefaultReferenceRecent = 250 * time.Millisecond
	DefaultYield           = 120 * time.Millisecond
	DefaultYieldEvery      = 100 * time.Millisecond
	DefaultClaimRetryMin   = 50 * time.Microsecond
	DefaultClaimRetryMax   = 10 * time.Millisecond
	DefaultStickyIdle      = 2 * time.Millisecond
	DefaultSyncWait        = 100 * time.Millisecond
	DefaultPairWait        = 3 * time.Millisecond
	DefaultMailboxIdle     = time.Second
	DefaultLookIdle        = time.Second
)

// NewPolicy is the policy whose queue's tickets begin at base, with the
// default knobs.
func NewPolicy(base int64) Policy {
	return Policy{
		Queue:    NewQueue(base),
		ParkIdle: DefaultParkIdle, HandoffDelay: DefaultHandoffDelay,
		SeatPoll: DefaultPoll, SyncWait: DefaultSyncWait, PairWait: DefaultPairWait,
		ReferenceRecent: DefaultReferenceRecent, Yield: DefaultYield, YieldEvery: DefaultYieldEvery,
		ClaimRetryMin: DefaultClaimRetryMin, ClaimRetryMax: DefaultClaimRetryMax,
		Watch: true, Handoff: true, Sticky: true, StickyIdle: DefaultStickyIdle,
		MailboxIdle: DefaultMailboxIdle, LookIdle: DefaultLookIdle,
	}
}

// Linger is how long a released record's descriptor, fd (its lock already
// dropped), stays open before its close wakes the first waiter queued on
// its inode; 0: close it now. away says the releaser is not about to lock
// again.
func (p *Policy) Linger(fd int, away bool) time.Duration {
	if who, _ := p.Who(fd); who == Waiter {
		if away || p.Starving(fd) {
			return 0
		}
		return p.HandoffDelay
	}
	return p.ParkIdle
}
