package store

import (
	"context"
	"path/filepath"
	"slices"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
)

// StoreRetirePrefix starts the quarantine name of the store's exact
// unlinks; LeaseRetirePrefix that of lease reclaims. The reaper knows both.
// They are the root's names (exactfs.ClassifyName), kept here for callers
// of earlier versions.
const (
	StoreRetirePrefix = exactfs.StoreRetirePrefix
	LeaseRetirePrefix = exactfs.LeaseRetirePrefix
)

// RemoveExpected removes rel only if it is still the file captured as want
// (see SameFile), by exact unlink: a successor at the name survives.
// It waits up to 30 seconds for another store writer's commit in the same
// directory; RemoveExpectedContext can give up earlier.
func (s *Store) RemoveExpected(rel string, want exactfs.Identity) error {
	return s.RemoveExpectedContext(context.Background(), rel, want)
}

// RemoveExpectedContext is RemoveExpected, giving up its wait for the
// directory's commit lock when ctx is done (an interrupted error that
// matches ctx's error; nothing was removed).
func (s *Store) RemoveExpectedContext(ctx context.Context, rel string, want exactfs.Identity) error {
	const op = "remove"
	parent, base, err := cleanRel(op, rel, false)
	if err != nil {
		return err
	}
	if err := s.before(op, rel); err != nil {
		return err
	}
	d, done, err := s.parentDir(op, parent)
	if err != nil {
		return err
	}
	defer done()
	hook.Fire(hook.StoreBeforeCommit, s.join(rel))
	unlock, err := lockDir(ctx, d)
	if err != nil {
		return err
	}
	if err := s.before(op, rel); err != nil {
		unlock()
		return err
	}
	err = d.UnlinkExact(base, want, exactfs.StoreRetireName())
	unlock()
	if err != nil {
		return err
	}
	hook.Fire(hook.StoreAfterCommit, s.join(rel))
	return s.after(op, rel)
}

// Mkdir creates the directory rel, owner-only (0700, no ACL), and verifies
// it.
func (s *Store) Mkdir(rel string) error {
	const op = "mkdir"
	if _, _, err := cleanRel(op, rel, false); err != nil {
		return err
	}
	hook.Fire(hook.StoreBeforeCommit, s.join(rel))
	if err := s.before(op, rel); err != nil {
		return err
	}
	if _, err := s.mkdir(op, rel); err != nil {
		return err
	}
	hook.Fire(hook.StoreAfterCommit, s.join(rel))
	return s.after(op, rel)
}

func (s *Store) mkdir(op, rel string) (exactfs.Identity, error) {
	d, base, done, err := s.dirOf(op, rel)
	if err != nil {
		return exactfs.Identity{}, err
	}
	defer done()
	if err := d.Mkdir(base, 0o700); err != nil {
		return exactfs.Identity{}, err
	}
	sub, err := d.OpenDir(base)
	if err != nil {
		return exactfs.Identity{}, err
	}
	defer sub.Close()
	f, err := sub.File()
	if err != nil {
		return exactfs.Identity{}, err
	}
	defer f.Close()
	if err := ApplyOwnerOnly(f); err != nil {
		return exactfs.Identity{}, err
	}
	// The new entry must survive a power cut.
	if err := d.Sync(); err != nil {
		return exactfs.Identity{}, err
	}
	return sub.Stat()
}

// List returns the names in the directory rel ("" or "." for the store
// itself), sorted, without the private names of crash residue (staging
// files, placeholders, quarantine names), which are not data.
func (s *Store) List(rel string) ([]string, error) {
	const op = "list"
	parent, base, err := cleanRel(op, rel, true)
	if err != nil {
		return nil, err
	}
	if err := s.checkBinding(op, rel); err != nil {
		return nil, err
	}
	d := s.root
	if base != "" {
		if d, err = s.root.OpenDir(filepath.Join(parent, base)); err != nil {
			return nil, err
		}
		defer d.Close()
	}
	names, err := d.ReadDirNames()
	if err != nil {
		return nil, err
	}
	names = slices.DeleteFunc(names, isPrivateName)
	slices.Sort(names)
	return names, nil
}

// isPrivateName reports whether name is a private residue name (one of the
// names exactfs and its TypeScript peers give crash residue) or one of the
// store's quarantine names.
//
// Of the root's private names it hides those that only crashes leave, and
// the file a directory's commit lock is taken on where directories take
// no lock (Windows: exactfs.DirLockName): other ".gjc-" names (a fence's lease, which lives in LocksDir) and
// TypeScript temp files (state-file residue the state lock sweeps) stay
// visible, as they always have.
func isPrivateName(name string) bool {
	switch exactfs.ClassifyName(name).Kind {
	case exactfs.NameStaging, exactfs.NameStoreRetire, exactfs.NameLeaseRetire, exactfs.NamePlaceholder,
		exactfs.NameLockQuarantine, exactfs.NameSpare, exactfs.NameMoveDir, exactfs.NameQuarantine, exactfs.NameRemoving,
		exactfs.NameDirLock:
		return true
	}
	return false
}
