package statelock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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
// rename, fsync of the directory); release. The new file keeps the
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
// are returned (errors.Join). If fn panics, the lock is released with the
// state file untouched, and the panic continues.
func Update(ctx context.Context, stateFile string, fn func(old []byte) ([]byte, error), opts ...Option) error {
	h, err := lockState(ctx, stateFile, opts)
	if err != nil {
		return err
	}
	var (
		wopts      []exactfs.WriteOption
		released   bool
		releasedAt time.Time
		relErr     error
		returned   bool
	)
	defer func() {
		if !returned {
			// fn panicked (or called runtime.Goexit). Nothing was written:
			// give the lock back, or it stays held for the life of the
			// process (net/http recovers a handler's panic), and every
			// later Update, here and in every other process, times out
			// on a holder that is truly alive. The panic goes on
			// unchanged: nothing here recovers it.
			if released {
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
			relErr = h.unlock(true, lastDirSync.Load() > int64(handoffDelay))
			released, releasedAt = true, time.Now()
		}))
	}
	opErr := h.update(fn, wopts...)
	returned = true
	if !released {
		if opErr != nil {
			// Nothing was written (fn failed, or the read or the write
			// before its rename): the caller is told fn's error, which may
			// rest on the bytes read, so they are made durable first (the
			// readers' rule, Lock's readable).
			if _, serr := h.readable(); serr != nil {
				return errors.Join(opErr, serr)
			}
		}
		return errors.Join(opErr, h.Unlock())
	}
	lastDirSync.Store(int64(time.Since(releasedAt)))
	h.l.close()
	if opErr != nil {
		opErr = fmt.Errorf("%w: %s: the new bytes were renamed into place and the lock released, "+
			"then the directory could not be fsynced: they may not survive a power cut, and later holders "+
			"may already have read them; read the state file again to see what it holds: %w",
			ErrOutcomeUnknown, stateFile, opErr)
	}
	return errors.Join(opErr, relErr)
}

// lastDirSync is how long the last early-released Update of this process
// took from its release to its return (the directory fsync, nearly all of
// it). When that is longer than handoffDelay, this process will not be
// back for the lock before a parked release would wake the first waiter
// anyway, so its release wakes that waiter at once (parkRecord's away);
// when it is shorter (tmpfs, a fast disk), the process is usually back
// first and takes the lock again without waking anyone, as a Lock/Unlock
// loop does.
var lastDirSync atomic.Int64

func (h *Held) update(fn func(old []byte) ([]byte, error), wopts ...exactfs.WriteOption) error {
	d, name := h.l.dir, h.l.base
	old, perm, err := readState(d, name)
	if err != nil {
		return err
	}
	next, err := fn(old)
	if err != nil {
		return err
	}
	_, err = d.WriteFile(name, next, perm, wopts...)
	return err
}

// readState reads the state file through a no-follow descriptor whose type
// is proved regular (a symlink or FIFO planted at F is refused, never read
// through): exactfs Capture, so a read that overlaps a write by someone who
// ignores the lock fails (changed_during_read) instead of returning a torn
// file. Absent means nil. perm is the mode the successor gets: the file's
// own permission bits, from the descriptor the bytes were read through, or
// 0600 for a file that does not exist yet.
func readState(d *exactfs.Dir, name string) (data []byte, perm fs.FileMode, err error) {
	data, id, err := d.Capture(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0o600, nil
	}
	return data, id.Mode.Perm(), err
}
