//go:build !exactfs_portable

package statelock

import (
	"errors"
	"io/fs"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/statelock/internal/wake"
)

// observation is what a waiter can know of the lock without touching it in
// a way that makes an inotify event: F.lock's inode and, through a
// descriptor the waiter already holds (its ticket, or the process's shared
// look descriptor), its metadata, its first bytes and its kernel locks. No
// open, no close, no write: an lstat, an fstat, a pread and two
// F_OFD_GETLK, none of which any watch reports.
//
// A waiter observes just before each attempt, and again when an event
// wakes it; when nothing it can observe changed in between (a wake is
// spurious), the attempt that failed would fail again on the same state,
// so the waiter sleeps on instead (see wake.Watch). That is what keeps a waiter
// from waking itself: a failed attempt opens F.lock (read-write on the
// steady-state path, which finds a live record instead of a tombstone;
// read-only to capture and judge it), and its closes are events of the
// very kinds that wake a waiter, which is why a waiter on a record without
// our kernel lock (a TypeScript holder, another host's record, a malformed
// one) used to poll as fast as it could. It also keeps waiters from waking
// each other, and from waking at every read of a TypeScript peer that
// polls. A holder that dies without touching its record (a TypeScript
// holder, whose death no event reports) is noticed at the next deadline of
// the backoff, which makes a full attempt whatever was observed.
//
// Taking the observation before the attempt, never after, is what makes
// the rule exact: whatever changes after it, the attempt included, differs
// from it at the next wake.
type observation struct {
	ok        bool // false: F.lock could not be observed; any wake counts
	exists    bool
	nameIno   uint64 // the inode F.lock names
	st        exactfs.RawStat
	data      string // up to observeMax bytes from the start of the record
	held      bool   // a holder's kernel lock on the record
	ahead     bool   // a waiter queued before this one (its ticket)
	heldKnown bool
}

// observeMax bounds the bytes an observation keeps: every record the
// protocol writes is smaller, and a larger one changes its size or mtime
// with any write.
const observeMax = 1024

// observe takes an observation of F.lock (and of the queue ahead of tk).
func (l *locker) observe(tk *wake.Ticket) observation {
	st, err := l.dir.LstatRaw(l.lockName)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return observation{ok: true}
	case err != nil || !st.Mode.IsRegular():
		return observation{}
	}
	fd := exactfs.LockFD(-1)
	if tk != nil && tk.Fd >= 0 && tk.Ino == st.Ino {
		fd = exactfs.LockFD(tk.Fd)
	} else {
		var done func()
		if fd, done = l.lookProbe(l.lockName); fd < 0 {
			return observation{}
		}
		defer done()
	}
	o := observation{ok: true, exists: true, nameIno: st.Ino}
	if o.st, err = fd.Stat(); err != nil {
		return observation{}
	}
	var buf [observeMax]byte
	n, err := fd.Pread(buf[:], 0)
	if err != nil {
		return observation{}
	}
	o.data = string(buf[:n])
	o.held, o.heldKnown = ofdHeldFd(fd)
	if tk != nil && exactfs.LockFD(tk.Fd) == fd {
		o.ahead = l.cfg.policy.Ahead(tk.Fd, tk.N)
	}
	return o
}

// same reports whether o and p observed the same state.
func (o observation) same(p observation) bool { return o.ok && p.ok && o == p }
