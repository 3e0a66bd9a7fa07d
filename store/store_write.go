package store

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
)

// Publish creates the file rel with data, owner-only (0600, in a directory
// verified to carry no default ACL), and never replaces: an existing rel is
// destination_exists and nothing changes. The bytes are staged and fsynced
// under a private name; right before the no-replace rename that commits
// them, the binding and the fence are asserted, and a lease lost by then
// publishes nothing. After the commit both are asserted again and the
// published file is verified owner-only.
func (s *Store) Publish(rel string, data []byte) (exactfs.Identity, error) {
	const op = "publish"
	d, base, done, err := s.dirOf(op, rel)
	if err != nil {
		return exactfs.Identity{}, err
	}
	defer done()
	id, err := d.Publish(base, data, 0o600, s.beforeCommit(op, rel), exactfs.ExactPerm())
	return s.committed(op, rel, d, base, id, err)
}

// committed finishes a write that exactfs reports committed: the file at
// the name must be the one written and owner-only, and the binding and the
// fence are asserted again (an error then has Committed set).
func (s *Store) committed(op, rel string, d *exactfs.Dir, base string, id exactfs.Identity, err error) (exactfs.Identity, error) {
	if err != nil {
		return exactfs.Identity{}, err
	}
	hook.Fire(hook.StoreAfterCommit, s.join(rel))
	if err := verifyNamed(d, base, id); err != nil {
		return exactfs.Identity{}, err
	}
	return id, s.after(op, rel)
}

// beforeCommit is the last check of a write, run by exactfs once the bytes
// are staged, right before the rename or exchange that commits them.
func (s *Store) beforeCommit(op, rel string) exactfs.WriteOption {
	return exactfs.BeforeCommit(func() error {
		hook.Fire(hook.StoreBeforeCommit, s.join(rel))
		return s.before(op, rel)
	})
}

// dirLockWait bounds the wait for a directory's commit lock; the lock is
// held for a few system calls and one directory fsync.
const dirLockWait = 30 * time.Second

// commitGuard is beforeCommit plus the directory's commit lock, for writes
// that commit by exchange (and the replacing writes that race them). An
// exchange-based compare-and-swap verifies what it swapped out and swaps
// back when it was not the expected file; two such swaps in flight at once
// in one directory can each put the other's file back, leaving a write
// that reported "nothing replaced" at the name and the other's file under
// a staging name (exactfs issue, .notes/store-needs.md #6). So the store's
// writers in one directory take an exclusive flock on it, from the last
// check to the end of the commit: staging and fsync of the bytes stay
// outside it. Writers that do not go through a store are not excluded. The
// returned function releases the lock; call it once the primitive returned.
func (s *Store) commitGuard(ctx context.Context, op, rel string, d *exactfs.Dir) (exactfs.WriteOption, func()) {
	var unlock func()
	opt := exactfs.BeforeCommit(func() error {
		hook.Fire(hook.StoreBeforeCommit, s.join(rel))
		u, err := lockDir(ctx, d)
		if err != nil {
			return err
		}
		if err := s.before(op, rel); err != nil {
			u()
			return err
		}
		unlock = u
		return nil
	})
	return opt, func() {
		if unlock != nil {
			unlock()
			unlock = nil
		}
	}
}

// verifyNamed verifies, after a commit, that the file the commit put at
// name in d (the inode of want) is owner-only. If the name already holds
// another file or none, a successor took it over after our commit: there is
// nothing of ours left to verify, and the commit stands. Failures are
// reported with Committed set, because the write is made.
func verifyNamed(d *exactfs.Dir, name string, want exactfs.Identity) error {
	committed := func(err error) error {
		var e *Error
		if errors.As(err, &e) {
			e.Committed = true
			return e
		}
		return &Error{Op: "verify", Path: d.Name() + "/" + name, Code: exactfs.CodeOf(err), Err: err, Committed: true,
			Detail: "the write was committed, but the result could not be verified owner-only"}
	}
	f, err := d.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		if errors.Is(err, exactfs.ErrNotFound) {
			return nil
		}
		return committed(err)
	}
	defer f.Close()
	id, err := fileInode(f)
	if err != nil {
		return committed(err)
	}
	if !id.SameInode(want) {
		return nil
	}
	if err := VerifyOwnerOnly(f); err != nil {
		return committed(err)
	}
	return nil
}

// Replace writes rel atomically and durably (old bytes or new, never torn),
// creating it if absent. The new file is created 0600 in a directory
// verified to carry no default ACL, and verified owner-only afterwards.
//
// The binding and the fence are asserted right before the rename that
// commits, as in Publish.
//
// Replace waits up to 30 seconds for another store writer's commit in the
// same directory; ReplaceContext can give up earlier.
func (s *Store) Replace(rel string, data []byte) (exactfs.Identity, error) {
	return s.ReplaceContext(context.Background(), rel, data)
}

// ReplaceContext is Replace, giving up its wait for the directory's commit
// lock when ctx is done (an interrupted error that matches ctx's error;
// nothing was written).
func (s *Store) ReplaceContext(ctx context.Context, rel string, data []byte) (exactfs.Identity, error) {
	const op = "replace"
	d, base, done, err := s.dirOf(op, rel)
	if err != nil {
		return exactfs.Identity{}, err
	}
	defer done()
	guard, unlock := s.commitGuard(ctx, op, rel, d)
	id, err := d.WriteFile(base, data, 0o600, guard, exactfs.ExactPerm())
	unlock()
	return s.committed(op, rel, d, base, id, err)
}

// ReadExpected reads rel and proves what it read: the bytes and the
// identity come from one no-follow descriptor, which is verified owner-only
// first. The identity is what ReplaceExpected and RemoveExpected compare.
func (s *Store) ReadExpected(rel string) ([]byte, exactfs.Identity, error) {
	const op = "read"
	if _, _, err := cleanRel(op, rel, false); err != nil {
		return nil, exactfs.Identity{}, err
	}
	if err := s.checkBinding(op, rel); err != nil {
		return nil, exactfs.Identity{}, err
	}
	f, err := s.root.OpenFile(rel, os.O_RDONLY, 0)
	if err != nil {
		return nil, exactfs.Identity{}, err
	}
	defer f.Close()
	if err := VerifyOwnerOnly(f); err != nil {
		return nil, exactfs.Identity{}, err
	}
	return exactfs.CaptureFile(f)
}

// SameFile reports whether the identity have still counts as the file
// captured as want, for the store's compare-and-swap and compare-and-delete:
// the same device and inode, size, modification time and SHA-256 of the
// bytes. The status change time is not compared: chmod, ACL tools, the
// store's own security repair and even rename move it without changing the
// file (exactfs compares ctime only where a rule says so). The modification
// time is compared: a writer that rewrote the same bytes is still another
// writer, and the compare must not be fooled by it (ABA).
func SameFile(want, have exactfs.Identity) bool { return want.SameContent(have) }

// ReplaceExpected is compare-and-swap: it replaces rel with data only if rel
// is still the file captured as want (see SameFile for the fields compared;
// a hard-linked file is refused). The swap is an atomic exchange, so the
// name is never missing; a writer that got in first keeps its file and the
// result is identity_mismatch, which means nothing was replaced: re-read and
// retry. A write that committed and was replaced by another writer right
// after is a success (the next compare sees the successor). The new file
// keeps the predecessor's mode, which must be owner-only (0600).
//
// ReplaceExpected waits up to 30 seconds for another store writer's commit
// in the same directory; ReplaceExpectedContext can give up earlier.
func (s *Store) ReplaceExpected(rel string, data []byte, want exactfs.Identity) (exactfs.Identity, error) {
	return s.ReplaceExpectedContext(context.Background(), rel, data, want)
}

// ReplaceExpectedContext is ReplaceExpected, giving up its wait for the
// directory's commit lock when ctx is done (an interrupted error that
// matches ctx's error; nothing was replaced).
func (s *Store) ReplaceExpectedContext(ctx context.Context, rel string, data []byte, want exactfs.Identity) (exactfs.Identity, error) {
	const op = "replace-expected"
	d, base, done, err := s.dirOf(op, rel)
	if err != nil {
		return exactfs.Identity{}, err
	}
	defer done()
	// A cheap pre-check from one lstat: exactfs proves the rest (the bytes
	// by their digest, the link count, the type) on its own capture, and
	// compares every field of have, whose digest is the caller's.
	fi, err := d.Lstat(base)
	if err != nil {
		return exactfs.Identity{}, err
	}
	have, ok := fi.Sys().(exactfs.Identity)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return exactfs.Identity{}, &Error{Op: op, Path: s.join(rel), Code: exactfs.CodeReparsePoint, Detail: "a symlink; refusing to follow or replace it"}
	case !ok || !fi.Mode().IsRegular():
		return exactfs.Identity{}, &Error{Op: op, Path: s.join(rel), Code: exactfs.CodeNotRegularFile, Detail: "not a regular file; refusing"}
	}
	have.SHA256 = want.SHA256
	if !SameFile(want, have) {
		return exactfs.Identity{}, &Error{Op: op, Path: s.join(rel), Code: exactfs.CodeIdentityMismatch,
			Detail: "not the expected file (another writer changed it); nothing was replaced"}
	}
	// The successor keeps the predecessor's mode: refuse before the commit
	// rather than publish a file that is not owner-only. (On Windows
	// owner-only is the file's DACL, read through a no-follow open at the
	// name; exactfs proves again, on its own capture, that the file it
	// replaces is have.)
	if ok, why := ownerOnlyRecord(have.Mode, func() (*os.File, func(), error) {
		f, err := d.OpenFile(base, os.O_RDONLY, 0)
		if err != nil {
			return nil, nil, err
		}
		return f, func() { f.Close() }, nil
	}); !ok {
		if why != nil {
			return exactfs.Identity{}, &Error{Op: op, Path: s.join(rel), Code: CodeModeMismatch, Err: why,
				Detail: "the file is not proved owner-only; its successor would inherit its security: make it owner-only (ApplyOwnerOnlyPath) or write it anew"}
		}
		return exactfs.Identity{}, newErr(op, s.join(rel), CodeModeMismatch,
			"the file is mode "+have.Mode.Perm().String()+", not owner-only 0600; its successor would inherit that", nil)
	}
	// exactfs compares every field; have differs from want at most in
	// ctime and link count, which the store does not compare (nlink is
	// checked by exactfs itself: it must be 1).
	guard, unlock := s.commitGuard(ctx, op, rel, d)
	id, err := d.ReplaceExpected(base, data, have, guard)
	unlock()
	return s.committed(op, rel, d, base, id, err)
}
