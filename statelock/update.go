package statelock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync/atomic"
	"time"

	"github.com/exactfs/exactfs"
)

// ErrOutcomeUnknown reports an Update whose new bytes were renamed into
// place and whose lock was released (early release, the default) before
// the fsync of the directory failed. The state file showed the new bytes
// to every process, later holders may already have read them and built on
// them, and whether they survive a power cut is unknown: neither "done" nor
// "nothing changed". Read the state file again to learn what it holds now.
// errors.Is finds it; the *exactfs.Error of the failed fsync
// (durability_failed) is wrapped as well. It is exactfs.ErrOutcomeUnknown,
// so one errors.Is also finds a write whose commit could not be proved.
var ErrOutcomeUnknown = exactfs.ErrOutcomeUnknown

// Update is the read-modify-write helper: lock stateFile; read it (nil when
// absent); call fn; if fn fails, leave the file untouched; otherwise replace
// it atomically and durably (exactfs WriteFile: a staged file, fsync,
// rename, fsync of the directory); release.
//
// fn returning ErrNoChange (or an error wrapping it) leaves the file as it
// is and Update returns nil. fn returning no bytes (nil or empty) is
// refused, the file left untouched, with an error satisfying
// errors.Is(err, ErrEmptyResult), unless WithAllowEmpty(true) was given:
// an empty result is nearly always a bug that would wipe the state. A
// missing directory of stateFile is refused (ErrNoDirectory) unless
// WithMakeDir(true) was given. The new file keeps the
// permission bits of the one it replaces (a replace must not silently
// change who may read the state); a state file Update creates is 0600.
//
// By default the lock is released right after the rename, and the
// directory is fsynced after that, before Update returns (early release;
// WithEarlyRelease(false) keeps the lock through the fsync). When Update
// returns nil, the state file durably holds what fn returned or what a
// later holder made of it, having read it; the package documentation
// ("Early release") shows why, crash by crash. If that last fsync fails,
// the error satisfies errors.Is(err, ErrOutcomeUnknown).
//
// A process killed at any instant leaves the state file with the old bytes
// or the new ones, and a lock that the next caller reclaims at once (its
// owner is provably dead). Concurrent Updates, from any number of processes
// and from TypeScript peers running the reference lock, lose no update. If
// the read, fn or the write fails and the release fails too, both errors
// are returned (errors.Join). If fn panics, the panic goes on in its own
// goroutine once the lock is released; nothing of fn's is written.
//
// Concurrent Updates of one state file in this process share one lock
// cycle, one read and one durable write (group commit, on by default;
// WithGroupCommit(false) turns it off): each fn is given the output of the
// previous caller's fn that succeeded, and each caller is told its own
// outcome (the package documentation, "Group commit").
func Update(ctx context.Context, stateFile string, fn func(old []byte) ([]byte, error), opts ...Option) error {
	c := newConfig(opts)
	if g, ok := joinGroup(ctx, stateFile, &c); ok {
		return g.update(ctx, fn)
	}
	h, err := lockStateWith(ctx, stateFile, c)
	if err != nil {
		return err
	}
	opErr, relErr := h.writeAndRelease(func(wopts ...exactfs.WriteOption) error { return h.update(fn, wopts...) }, nil)
	return errors.Join(opErr, relErr)
}

// writeAndRelease runs op, which may replace the state file through
// d.WriteFile with the options it is given, and releases the lock: at the
// rename (early release, the default; released is then called, if not nil,
// as soon as the lock is free) or after op. It returns op's error (marked
// ErrOutcomeUnknown when it came after an early release) and the release's.
// If op panics or calls runtime.Goexit, the lock is released and the panic
// goes on.
func (h *Held) writeAndRelease(op func(wopts ...exactfs.WriteOption) error, released func()) (opErr, relErr error) {
	// What the release at the rename tells the rest of this function, in
	// one value: the callback that sets it outlives this frame as far as
	// the compiler can tell, so each variable it wrote was a separate
	// allocation.
	var (
		wopts    []exactfs.WriteOption
		returned bool
		rel      = new(struct {
			err        error
			early      bool
			releasedAt time.Time
			syncFrom   time.Time // when the directory fsync began, if it was not paired as the second (pairsync.go)
		})
	)
	defer func() {
		if !returned {
			// op panicked (or called runtime.Goexit). Nothing was written:
			// give the lock back, or it stays held for the life of the
			// process (net/http recovers a handler's panic), and every
			// later Update, here and in every other process, times out
			// on a holder that is truly alive. The panic goes on
			// unchanged: nothing here recovers it.
			if rel.early {
				h.l.keepPromise(false)
				h.l.close()
			} else {
				h.Unlock()
			}
		}
	}()
	if !h.l.cfg.holdThroughSync {
		// The write is still using the locker's directory descriptor (its
		// fsync comes next), so the release leaves it open.
		wopts = append(wopts, exactfs.AfterCommit(func() {
			rel.err = h.unlock(context.Background(), true, lastDirSync.Load() > int64(h.l.cfg.policy.HandoffDelay))
			rel.early, rel.releasedAt = true, time.Now()
			if released != nil {
				released() // this process's next batch may take the lock now
			}
			if h.l.pairDirSync() { // the directory fsync comes next
				rel.syncFrom = time.Now()
			}
		}))
	}
	opErr = op(wopts...)
	returned = true
	if !rel.early {
		if opErr != nil {
			// Nothing was written (fn failed, or the read or the write
			// before its rename): the caller is told fn's error, which may
			// rest on the bytes read, so they are made durable first (the
			// readers' rule, Lock's readable).
			if serr := h.readDurable(); serr != nil {
				opErr = errors.Join(opErr, serr)
			}
		}
		return opErr, h.Unlock()
	}
	lastDirSync.Store(int64(time.Since(rel.releasedAt)))
	if opErr == nil && !rel.syncFrom.IsZero() {
		lastDirFsync.Store(int64(time.Since(rel.syncFrom)))
	}
	h.l.keepPromise(opErr == nil) // the directory fsync returned, or failed
	h.l.close()
	if opErr != nil {
		opErr = fmt.Errorf("%w: %s: the new bytes were renamed into place and the lock released, "+
			"then the directory could not be fsynced: they may not survive a power cut, and later holders "+
			"may already have read them; read the state file again to see what it holds: %w",
			ErrOutcomeUnknown, h.stateFile(), opErr)
	}
	return opErr, rel.err
}

// lastDirSync is how long the last early-released Update of this process
// took from its release to its return (the directory fsync, nearly all of
// it). When that is longer than the policy's HandoffDelay, this process
// will not be back for the lock before a parked release would wake the
// first waiter anyway, so its release wakes that waiter at once
// (parkRecord's away); when it is shorter (tmpfs, a fast disk), the
// process is usually back first and takes the lock again without waking
// anyone, as a Lock/Unlock loop does.
var lastDirSync atomic.Int64

func (h *Held) update(fn func(old []byte) ([]byte, error), wopts ...exactfs.WriteOption) error {
	d, name := h.l.dir, h.l.base
	old, perm, id, err := readState(d, name)
	if err != nil {
		return err
	}
	next, err := fn(old)
	if errors.Is(err, ErrNoChange) {
		// Nothing to write, but the caller is told that what fn read is
		// the state: make sure it is durable (a holder that released
		// before its directory fsync may have renamed it in), as Lock's
		// readers' rule does.
		return h.readDurable()
	}
	if err != nil {
		return err
	}
	if len(next) == 0 && !h.l.cfg.allowEmpty {
		return emptyResult(h.stateFile())
	}
	// perm is the old file's mode (or 0600 for a new one), kept exactly:
	// a umask must not change who may read state that exists. A new file
	// run as root in another uid's directory is that uid's, as the lock's
	// records beside it are (chownForDir; exactfs.DirOwnerForNewFile):
	// root-owned 0600, it locked the directory's owner out of its own
	// state.
	_, err = d.WriteFile(name, next, perm, append(wopts, exactfs.ExactPerm(), exactfs.Predecessor(id), exactfs.DirOwnerForNewFile())...)
	return err
}

// stateFile is the path of the state file, as the caller spelled it.
func (h *Held) stateFile() string { return strings.TrimSuffix(h.l.lockPath, lockSuffix) }

// readState reads the state file through a no-follow descriptor whose type
// is proved regular (a symlink or FIFO planted at F is refused, never read
// through): exactfs Capture, so a read that overlaps a write by someone who
// ignores the lock fails (changed_during_read) instead of returning a torn
// file. Absent means nil. perm is the mode the successor gets: the file's
// own permission bits, from the descriptor the bytes were read through, or
// 0600 for a file that does not exist yet. id is that capture's identity
// (zero when absent): the write passes it as exactfs.Predecessor, so the
// successor's owner comes from this capture instead of another lstat of
// the name (the lock keeps every writer that honours it out between the
// two).
//
// A state file the write could never replace because of its owner
// (another uid's in a shared sticky directory, say: planted) is refused
// here, unread, before fn is called for nothing (Dir.CaptureReplaceable).
func readState(d *exactfs.Dir, name string) (data []byte, perm fs.FileMode, id exactfs.Identity, err error) {
	data, id, err = d.CaptureReplaceable(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0o600, exactfs.Identity{}, nil
	}
	return data, id.Mode.Perm(), id, err
}
