package statelock

import (
	"context"
	"fmt"
	"os"
	"runtime"
)

// Leak detection, as the root does it for a Dir (exactfs/leak.go) and the
// store for a Lease: a runtime cleanup on every Held notices one that
// became unreachable without Unlock.
//
// Such a lock is worse than a leaked descriptor: the process is alive and
// its record says so, so every contender, exactfs or the reference, waits
// on it for as long as the process runs (with kernel slots, for as long as
// the descriptor that holds the slot lock stays open). Nobody can Unlock an
// unreachable Held, so the cleanup does it, as Unlock would (proving the
// record is still exactly ours before it becomes a tombstone), and writes
// one line to standard error naming the lock: a leak in the program, loud
// enough to be found, repaired without killing the process. The release
// runs on a goroutine of its own (it may wait for the transition claim),
// never on the runtime's cleanup goroutine. The cleanup sees only the
// locker and the record, never the Held, and unlock stops it, so a lock
// released by its holder is never released twice.

// leakReport receives the report of a dropped Held. Tests replace it.
var leakReport = func(msg string) { fmt.Fprintln(os.Stderr, msg) }

type heldLeak struct {
	l   *locker
	rec *heldRecord
}

func watchHeld(h *Held) {
	h.cleanup = runtime.AddCleanup(h, heldDropped, heldLeak{l: h.l, rec: h.rec})
}

func heldDropped(lk heldLeak) {
	go func() {
		err := (&Held{l: lk.l, rec: lk.rec}).unlock(context.Background(), false, true)
		what := "it was released"
		if err != nil {
			what = "releasing it failed: " + err.Error()
		}
		leakReport(fmt.Sprintf("exactfs: the lock %s became unreachable without a call to Unlock; %s (a leak in the program using exactfs)", lk.l.lockPath, what))
	}()
}
