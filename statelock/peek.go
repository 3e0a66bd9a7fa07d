package statelock

import (
	"time"

	"github.com/exactfs/exactfs"
)

// A waiter whose holder the kernel cannot vouch for (no OFD locks: macOS,
// the BSDs, the portable build, a filesystem without them; or a TypeScript
// holder, which takes no kernel lock) made every attempt a full one: the
// transition claim (a mkdir, the sidecar, two fsyncs on its way out) only
// to read the same live record again. On a Mac each of those fsyncs is a
// full drive flush, and on Linux the waiters' claims crowd the claim the
// TypeScript holder needs to release. peekUnchanged makes most of those
// attempts a look instead: one lstat and the pid rules.
//
// It never takes or removes anything, so it cannot make two owners; all it
// can do wrong is report contention that is already over, which delays the
// waiter. That is bounded twice:
//   - a record is "unchanged" only if its lstat matches the one the last
//     full attempt read (inode, size, both timestamps), and only if its
//     change time was already peekRacy old when that attempt read it: a
//     rewrite in place soon after, inside one tick of a coarse filesystem
//     clock, could leave every field the same (the "racily clean" entries
//     of git's index are the same problem);
//   - a full attempt is made at least every peekFresh whatever the looks
//     say, which bounds the delay where timestamps are coarser still (FAT:
//     two seconds) or the clock was stepped back.
//
// A holder that dies is seen at the next look: the pid rules are asked
// again each time, on the bytes the full attempt read.

const (
	// peekRacy is how old a record's change time must have been when a
	// full attempt read it for an lstat match to stand for its bytes.
	peekRacy = 50 * time.Millisecond
	// peekFresh is the longest a waiter goes on looks alone.
	peekFresh = time.Second
)

// seenRecord is a live record a full attempt read at F.lock, and when.
type seenRecord struct {
	s  *snapshot
	at time.Time
}

// peekUnchanged reports last again when F.lock is still the record last's
// full attempt read and the pid rules still find its holder not dead; nil
// (make a full attempt) otherwise.
func (l *locker) peekUnchanged(last *contention) *contention {
	seen := last.seen
	if seen == nil || time.Since(seen.at) >= peekFresh {
		return nil
	}
	if seen.at.UnixNano()-seen.s.id.CtimeNs < int64(peekRacy) {
		return nil
	}
	st, err := l.dir.LstatRaw(l.lockName)
	if err != nil || !sameStat(st, seen.s.id) {
		return nil
	}
	// No descriptor: the pid rules alone, as for any record the kernel
	// does not vouch for (kernelVerdict needs the inode's descriptor).
	if v := l.judgeRecord(seen.s, nil); v.dead() {
		return nil
	}
	return last
}

// sameStat reports whether st is the inode id describes, unchanged in
// size and in both timestamps.
func sameStat(st exactfs.RawStat, id exactfs.Identity) bool {
	return st.Mode.IsRegular() && st.Dev == id.Dev && st.Ino == id.Ino && st.Size == id.Size &&
		st.MtimeNs == id.MtimeNs && st.CtimeNs == id.CtimeNs
}
