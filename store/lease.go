package store

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
)

// Lease is a held lease lock. Its methods are safe for concurrent use. A
// Lease must be released: its heartbeat goroutine runs, and its record
// stays live, until Release. A Lease dropped without Release is reported
// on standard error and released when the garbage collector finds it (see
// leak.go).
type Lease struct {
	*lease
	cleanup runtime.Cleanup // reports and releases a dropped Lease
}

// lease is a Lease's state. The heartbeat goroutine and the leak cleanup
// hold this, never the Lease, so a Lease the program dropped becomes
// unreachable even while its heartbeat runs.
type lease struct {
	dir     *exactfs.Dir
	ownsDir bool
	path    string
	name    string // the lock file's name in dir
	cfg     leaseConfig

	mu       sync.Mutex
	f        *os.File         // the descriptor we created; every write goes through it
	inode    exactfs.Identity // dev and ino of f
	rec      LeaseRecord      // what we last wrote
	written  []byte           // its bytes; nil when a write failed half way
	released bool
	lost     error // set by the heartbeat when it found the lease gone

	stop     chan struct{}
	done     chan struct{}
	relOnce  sync.Once
	relError error
}

// Path returns the path of the lock file.
func (l *Lease) Path() string { return l.path }

// AttemptID returns the attempt id in our record.
func (l *Lease) AttemptID() string { return l.rec.AttemptID }

// writeLocked rewrites the record in place through the held descriptor:
// write from offset 0, truncate to the new length, fsync. Writing before
// truncating means a reader never sees an empty file, only (briefly) a
// record it cannot parse, which counts as held. l.mu must be held (or l
// not yet shared).
func (l *lease) writeLocked() error {
	b := l.rec.Marshal()
	l.written = nil
	if _, err := l.f.WriteAt(b, 0); err != nil {
		return newErr("write", l.path, exactfs.CodeIOError, "the lease record could not be written", err)
	}
	if err := l.f.Truncate(int64(len(b))); err != nil {
		return newErr("write", l.path, exactfs.CodeIOError, "the lease record could not be truncated", err)
	}
	// A renewal that is not on disk would let a crash forget the
	// heartbeat; a release that is not on disk would strand the lease.
	if err := l.f.Sync(); err != nil {
		return newErr("write", l.path, exactfs.CodeDurabilityFailed, "the lease record could not be flushed", err)
	}
	l.written = b
	return nil
}

// checkLocked proves the lease is still ours: the path names the inode we
// created, and holds exactly the bytes we last wrote (so our attemptId, not
// released).
func (l *lease) checkLocked() error {
	if l.released {
		return l.lostErr("the lease was released", nil)
	}
	if l.lost != nil {
		return l.lost
	}
	data, id, err := l.dir.CaptureRecord(l.name + exactfs.LeaseSuffix)
	if err != nil {
		return l.lostErr("the lock file cannot be read at its name", err)
	}
	if !id.SameInode(l.inode) {
		return l.lostErr(fmt.Sprintf("the lock path names another file (inode %d, ours %d)", id.Ino, l.inode.Ino), nil)
	}
	if ok, why := ownerOnlyRecord(id.Mode, l.ownFile); !ok {
		// Someone changed the mode (on Windows: the DACL) of our
		// owner-only lock file while we held it: the record is no longer
		// private, and whoever did it can do more. Nothing more is written
		// into it, not even "released".
		detail := fmt.Sprintf("the lock file's mode is %04o, not 0600", id.Mode.Perm())
		if why != nil {
			detail = "the lock file is no longer proved owner-only"
		}
		return l.lostErr(detail,
			&Error{Op: "assert", Path: l.path, Code: CodeModeMismatch, Err: why,
				Detail: "the lock file was made accessible to others while the lease was held; find out who changed it, then remove it once no process uses it"})
	}
	if l.written == nil || !bytes.Equal(data, l.written) {
		if rec, err := ParseLeaseRecord(data); err == nil && rec.AttemptID != l.rec.AttemptID {
			return l.lostErr("the record carries another attempt ("+rec.AttemptID+")", nil)
		}
		return l.lostErr("the record was rewritten by someone else", nil)
	}
	return nil
}

// ownFile hands ownerOnlyRecord the lease's own descriptor (proved, just
// before, to be the file at the lock path); it is not closed there.
func (l *lease) ownFile() (*os.File, func(), error) { return l.f, func() {}, nil }

func (l *lease) lostErr(detail string, cause error) error {
	return &Error{Op: "assert", Path: l.path, Code: CodeLeaseLost, Detail: "lease lost: " + detail, Err: cause}
}

// renewLocked extends the lease through the descriptor.
func (l *lease) renewLocked() error {
	now := nowMs()
	l.rec.HeartbeatAt = now
	l.rec.LeaseExpiresAt = now + l.cfg.lease.Milliseconds()
	return l.writeLocked()
}

// AssertOwned is the fencing check: it returns nil only if the lock path
// still names the file this lease created and that file still holds our
// record, unreleased. Otherwise it returns an error matching ErrLeaseLost.
// A lease within one heartbeat of expiry (or past it: nobody may take an
// expired lease from a live holder) is renewed here, so a starved heartbeat
// goroutine does not fence a live holder; the ownership proof is repeated
// after the renewal.
func (l *Lease) AssertOwned() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkLocked(); err != nil {
		return err
	}
	if time.Duration(l.rec.LeaseExpiresAt-nowMs())*time.Millisecond > l.cfg.renewWithin() {
		return nil
	}
	if err := l.renewLocked(); err != nil {
		return l.lostErr("the renewal failed", err)
	}
	return l.checkLocked()
}

func (l *lease) heartbeat() {
	defer close(l.done)
	t := time.NewTicker(l.cfg.heartbeat)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		hook.Fire(hook.LeaseHeartbeat, l.path)
		l.mu.Lock()
		err := l.checkLocked()
		if err == nil {
			if rerr := l.renewLocked(); rerr != nil {
				err = l.lostErr("the heartbeat could not renew the record", rerr)
			}
		}
		if err != nil && !l.released {
			// Keep the first reason; every later check reports it.
			l.lost = err
		}
		l.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// Release gives the lease up: it stops the heartbeat, proves the lease is
// still ours, and rewrites the record through the held descriptor with
// released:true and the lease ending now. It never unlinks the lock file
// by name, because a releaser whose lease was lost would otherwise remove a
// successor's record. When the proof fails, nothing is written, the
// descriptor is closed, and the error matches ErrLeaseLost. Release is
// idempotent: later calls return the first call's result.
func (l *Lease) Release() error {
	l.cleanup.Stop()
	return l.release()
}

func (l *lease) release() error {
	l.relOnce.Do(func() {
		if l.stop != nil {
			close(l.stop)
			<-l.done
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		err := l.checkLocked()
		if err == nil {
			now := nowMs()
			l.rec.Released = true
			l.rec.HeartbeatAt = now
			l.rec.LeaseExpiresAt = now
			err = l.writeLocked()
		}
		l.released = true
		if cerr := l.f.Close(); err == nil && cerr != nil {
			err = newErr("release", l.path, exactfs.CodeIOError, "closing the lock file failed", cerr)
		}
		if l.ownsDir {
			l.dir.Close()
		}
		l.relError = err
	})
	return l.relError
}
