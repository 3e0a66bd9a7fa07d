package store

import (
	"fmt"
	"os"
	"runtime"
)

// Leak detection, as cmd/go's lockedfile does it: a runtime cleanup on every
// Lease notices one that became unreachable without Release.
//
// lockedfile panics there, because a locked file nobody can unlock any more
// is a bug in the go command itself. A library cannot kill its user's
// process for a missing Release, and today the process would keep the
// lease until it exits: its heartbeat goroutine renews the record, and every
// contender waits for a holder that will never release. So the cleanup
// writes one line to standard error naming the lock file, then does what
// Release does: proves the lease is still ours, writes the release through
// our descriptor, and closes the descriptor (and the locks directory the
// lease opened). That hands the lease on no earlier than a holder that
// called Release would: nobody can call AssertOwned, Fence or a fenced
// store mutation on an unreachable Lease (a Store keeps its fence
// reachable), so no fenced step of the program still relies on it. Code
// that kept working after dropping the Lease without ever asserting it had
// no exclusion to lose: a lease is only as good as its last AssertOwned.

// leakReport receives the report of a Lease dropped without Release.
// Tests replace it to observe the report.
var leakReport = func(msg string) { fmt.Fprintln(os.Stderr, msg) }

// watchLease wraps l in the Lease handed to the caller and arms the leak
// cleanup on it.
func watchLease(l *lease) *Lease {
	h := &Lease{lease: l}
	h.cleanup = runtime.AddCleanup(h, leaseDropped, l)
	return h
}

// leaseDropped runs in the runtime's cleanup goroutine, which must not
// block on the heartbeat or the disk: the release runs on a goroutine of
// its own.
func leaseDropped(l *lease) {
	leakReport(fmt.Sprintf("exactfs/store: the Lease on %s became unreachable without a call to Release; it is being released (a leak in the program using exactfs)", l.path))
	go l.release()
}
