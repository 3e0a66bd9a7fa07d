package store

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/exactfs/exactfs"
)

// DefaultReapAge is how old residue must be before the reaper removes it:
// the 15 minutes the TypeScript reapers wait before removing a placeholder.
const DefaultReapAge = 15 * time.Minute

// ReapOption configures Reap.
type ReapOption func(*reapConfig)

type reapConfig struct {
	minAge time.Duration
	now    func() time.Time
	ctx    context.Context
}

// ReapMinAge sets how long ago residue must have been last written or
// renamed (the later of its mtime and ctime) before it is removed (default
// 15 minutes).
func ReapMinAge(d time.Duration) ReapOption { return func(c *reapConfig) { c.minAge = d } }

// Kept is residue the reaper found and left, with the reason.
type Kept struct {
	Path   string
	Reason string
}

// ReapReport says what Reap removed and what it kept.
type ReapReport struct {
	Removed []string
	Kept    []Kept
}

// reapLockSlice is how long the reaper keeps a directory's commit lock
// before it lets a waiting writer commit.
const reapLockSlice = 10 * time.Millisecond

// maxReapDepth bounds the walk, so a pathologically deep tree cannot make
// the reaper run forever.
const maxReapDepth = 64

// Reap removes crash residue in the store that is provably ours and inert,
// walking every directory of the store without following links. Residue is
// recognized only by its private name: exact
// unlink placeholders, staging names ".<dest>.<uuid>.staging|.replacement",
// and the quarantine names of the store and of lease reclaims. Such an
// object is removed, by exact unlink of the identity just proved, only if it
// is a regular file with a single link, not written or renamed within the
// age threshold, and
//
//   - it is empty (a placeholder, or a quarantine name holding the empty
//     placeholder of an interrupted exact unlink), or
//   - it is a non-empty staging file, or a non-empty file under the
//     store's or a lease's retire name (what one of our exact unlinks
//     detached after proving it was to go, left there by a remover killed
//     before the delete), that no process on this host has open.
//     The proof is the kernel's: a write lease (fcntl F_SETLEASE, Linux) is
//     granted only when no other descriptor for the file exists anywhere.
//     Every writer keeps its staging file open from creation until it is
//     committed, so an unopened staging file old enough is the leftover of
//     a writer that died (or, after ReplaceExpected's exchange, a
//     predecessor its writer was about to delete). A writer that merely
//     stalled past the threshold loses nothing: its rename then finds no
//     staging file and reports the write as not committed. Where the proof
//     is unavailable (other systems, network filesystems without leases),
//     non-empty staging files are kept.
//
// Anything else carrying a residue name (a symlink, a hard link, a
// non-empty placeholder or other quarantined file, a recent file, an open
// staging or retired file) is kept and reported with the reason. Objects without a
// residue name are never looked at. Each directory is reaped under the
// store's commit lock for it (see commitGuard), so no write of a store is
// between its commit and its cleanup there meanwhile.
//
// Reap waits for the store's writers' commits (each up to 30 seconds);
// ReapContext can give up earlier.
func (s *Store) Reap(opts ...ReapOption) (*ReapReport, error) {
	return s.ReapContext(context.Background(), opts...)
}

// ReapContext is Reap, stopping when ctx is done: the entry being judged
// is finished, and the report says what was removed and kept so far, with
// an interrupted error that matches ctx's error.
func (s *Store) ReapContext(ctx context.Context, opts ...ReapOption) (*ReapReport, error) {
	cfg := reapConfig{minAge: DefaultReapAge, now: time.Now, ctx: ctx}
	for _, o := range opts {
		o(&cfg)
	}
	if err := s.checkBinding("reap", ""); err != nil {
		return nil, err
	}
	r := &ReapReport{}
	err := s.reapDir(&cfg, r, s.root, "", 0)
	if berr := s.checkBinding("reap", ""); berr != nil {
		err = errors.Join(err, berr)
	}
	return r, err
}

type residueKind int

const (
	notResidue     residueKind = iota
	emptyResidue               // must be empty to be removed
	stagingResidue             // may hold bytes
)

// classify says what a private name can hold. A staging file holds the
// bytes of a write that never committed. A retire name holds what one of
// our exact unlinks detached, after it proved the object was to go (a
// Remove, a predecessor ReplaceExpected exchanged out, a reaped staging
// file, a dead lease): it keeps its bytes only when the remover died
// between the detach and the delete, so it may hold bytes too, and is
// removed, like a staging file, once nobody has it open. Any other
// private name (placeholders, other implementations' quarantines) must be
// empty.
func classify(name string) residueKind {
	switch exactfs.ClassifyName(name).Kind {
	case exactfs.NameStaging, exactfs.NameStoreRetire, exactfs.NameLeaseRetire:
		return stagingResidue
	case exactfs.NamePlaceholder, exactfs.NameLockQuarantine, exactfs.NameSpare, exactfs.NameMoveDir, exactfs.NameQuarantine:
		return emptyResidue
	}
	return notResidue
}

func (s *Store) reapDir(cfg *reapConfig, r *ReapReport, d *exactfs.Dir, rel string, depth int) error {
	// The store's writers hold this lock from the last check before a
	// commit to the end of it, which is when a staging name holds a
	// predecessor nobody has open: the reaper must not look then.
	unlock, err := lockDir(cfg.ctx, d)
	if err != nil {
		return err
	}
	names, err := d.ReadDirNames()
	if err != nil {
		unlock()
		return err
	}
	var subdirs []string
	var errs []error
	held := time.Now()
	for _, name := range names {
		if err := cfg.ctx.Err(); err != nil {
			unlock()
			return errors.Join(append(errs, newErr("reap", d.Name(), exactfs.CodeInterrupted, "gave up", err))...)
		}
		// Each entry is judged and removed under the lock; between
		// entries the writers get their turn, so a directory with
		// thousands of remnants does not stall a mutation for the whole
		// sweep (or past its dirLockWait).
		if time.Since(held) > reapLockSlice {
			unlock()
			// A writer polls for the lock every few milliseconds at most
			// (lockDir): leave it that long to take it.
			if err := sleepCtx(cfg.ctx, dirLockMaxPause); err != nil {
				return errors.Join(append(errs, newErr("reap", d.Name(), exactfs.CodeInterrupted, "gave up", err))...)
			}
			if unlock, err = lockDir(cfg.ctx, d); err != nil {
				return errors.Join(append(errs, err)...)
			}
			held = time.Now()
		}
		p := filepath.Join(rel, name)
		fi, err := d.Lstat(name)
		if err != nil {
			if !errors.Is(err, exactfs.ErrNotFound) {
				errs = append(errs, err)
			}
			continue
		}
		kind := classify(name)
		if fi.IsDir() {
			if kind != notResidue {
				r.Kept = append(r.Kept, Kept{p, "a directory with a residue name; only files are reaped"})
			}
			subdirs = append(subdirs, name)
			continue
		}
		if kind == notResidue {
			continue
		}
		if reason := s.reapOne(cfg, d, name, kind, fi.Mode().IsRegular()); reason != "" {
			r.Kept = append(r.Kept, Kept{p, reason})
		} else {
			r.Removed = append(r.Removed, p)
		}
	}
	unlock()
	for _, name := range subdirs {
		p := filepath.Join(rel, name)
		if depth >= maxReapDepth {
			r.Kept = append(r.Kept, Kept{p, "too deep; not searched"})
			continue
		}
		sub, err := d.OpenDir(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := s.reapDir(cfg, r, sub, p, depth+1); err != nil {
			errs = append(errs, err)
		}
		sub.Close()
	}
	return errors.Join(errs...)
}

// reapOne removes one residue candidate, or returns why it was kept.
func (s *Store) reapOne(cfg *reapConfig, d *exactfs.Dir, name string, kind residueKind, regular bool) string {
	if !regular {
		return "not a regular file (symlinks, FIFOs and devices are never ours to remove)"
	}
	// The identity is proved through one no-follow descriptor; the same
	// identity is what the exact unlink removes, so a file that changes
	// after the proof survives.
	id, idle, err := inspectResidue(d, name, kind == stagingResidue)
	if err != nil {
		return "could not be inspected: " + err.Error()
	}
	// Age counts from the later of the last write and the last rename:
	// the predecessor that ReplaceExpected has just exchanged out to a
	// staging name keeps its old mtime, but the exchange moved its ctime.
	last := max(id.MtimeNs, id.CtimeNs)
	switch {
	case id.Nlink != 1:
		return "hard-linked: its other names would keep the bytes"
	case cfg.now().Sub(time.Unix(0, last)) < cfg.minAge:
		return "too recent (written or renamed " + cfg.now().Sub(time.Unix(0, last)).Round(time.Second).String() + " ago): its writer may still be working"
	case id.Size != 0 && kind != stagingResidue:
		return "not empty: only empty placeholders are provably inert"
	case id.Size != 0 && idle != "":
		return "its creator is not provably gone: " + idle
	}
	if err := d.UnlinkExact(name, id, exactfs.StoreRetireName()); err != nil {
		return "exact unlink refused: " + err.Error()
	}
	return ""
}
