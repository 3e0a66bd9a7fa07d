package store

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
)

// LocksDir is the directory, inside a store, that holds its fence leases.
const LocksDir = "locks"

// Option configures Open.
type Option func(*options)

type options struct{ create, repair bool }

// Create makes Open create the directory (mode 0700, owner-only) when it
// does not exist. Its parent must exist.
func Create() Option { return func(o *options) { o.create = true } }

// Repair makes Open apply owner-only security to an existing directory
// instead of only verifying it.
func Repair() Option { return func(o *options) { o.repair = true } }

// Store is an owner-only directory of files, bound to one inode. Its
// methods are safe for concurrent use.
type Store struct {
	path     string
	root     *exactfs.Dir
	rootFile *os.File // the same directory, for security calls on its descriptor
	dev, ino uint64

	mu     sync.Mutex
	fence  *Lease
	closed bool
}

// Open opens the store at dir and binds it to the directory's device and
// inode. The directory must be owner-only (verified, or applied with
// Repair or when Create made it).
func Open(dir string, opts ...Option) (*Store, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	dir = filepath.Clean(dir)
	apply := o.repair
	d, err := exactfs.OpenDir(dir)
	if err != nil && o.create && errors.Is(err, exactfs.ErrNotFound) {
		if merr := exactfs.Mkdir(dir, 0o700); merr != nil && !errors.Is(merr, exactfs.ErrDestinationExists) {
			return nil, merr
		}
		apply = true
		d, err = exactfs.OpenDir(dir)
	}
	if err != nil {
		return nil, err
	}
	f, err := d.File()
	if err != nil {
		d.Close()
		return nil, err
	}
	if apply {
		err = ApplyOwnerOnly(f)
	} else {
		err = VerifyOwnerOnly(f)
	}
	if err != nil {
		f.Close()
		d.Close()
		return nil, err
	}
	s := &Store{path: dir, root: d, rootFile: f}
	s.dev, s.ino = d.Inode()
	return s, nil
}

// Path returns the path the store was opened on.
func (s *Store) Path() string { return s.path }

// Close releases the fence lease, if any, and closes the store. It is safe
// while other goroutines use the store: the store's descriptors are
// reference-counted (see exactfs.Dir), so an operation in flight either
// completes on the store's directory or fails as closed (errors.Is
// os.ErrClosed); a mutation that committed before it noticed says so
// (Committed). Calls after Close fail as closed. Calling Close again does
// nothing.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	fence := s.fence
	s.mu.Unlock()
	var err error
	if fence != nil {
		err = fence.Release()
	}
	s.rootFile.Close()
	s.root.Close()
	return err
}

// checkBinding proves the store's path still names the directory the store
// is bound to. Operations go through the bound descriptor either way; the
// check makes sure that what they do is what a reader of the path sees.
func (s *Store) checkBinding(op, rel string) error {
	d, err := exactfs.OpenDir(s.path)
	if err != nil {
		return &Error{Op: op, Path: s.join(rel), Code: CodeRootChanged, Err: err,
			Detail: "root binding changed: " + s.path + " no longer names the store's directory"}
	}
	dev, ino := d.Inode()
	d.Close()
	if dev != s.dev || ino != s.ino {
		return &Error{Op: op, Path: s.join(rel), Code: CodeRootChanged,
			Detail: "root binding changed: " + s.path + " was replaced by another directory"}
	}
	return nil
}

func (s *Store) join(rel string) string { return filepath.Join(s.path, rel) }

// cleanRel checks a store-relative path: not empty, not absolute, no "..",
// no NUL. It returns the parent ("" for the root) and the final name.
func cleanRel(op, rel string, allowRoot bool) (parent, base string, err error) {
	bad := func(why string) (string, string, error) {
		return "", "", &Error{Op: op, Path: rel, Code: exactfs.CodeInvalidRequest, Detail: why}
	}
	if strings.IndexByte(rel, 0) >= 0 {
		return bad("the path contains a NUL byte")
	}
	if filepath.IsAbs(rel) || strings.HasPrefix(rel, "/") {
		return bad("an absolute path is refused: name a path inside the store")
	}
	var comps []string
	for _, c := range strings.Split(filepath.ToSlash(rel), "/") {
		switch c {
		case "", ".":
			continue
		case "..":
			return bad(`".." is refused: a store path may not climb out of the store`)
		}
		comps = append(comps, c)
	}
	if len(comps) == 0 {
		if allowRoot {
			return "", "", nil
		}
		return bad("the path names the store itself, not a file in it")
	}
	return strings.Join(comps[:len(comps)-1], "/"), comps[len(comps)-1], nil
}

// parentDir opens the parent directory of a store path (through the
// exactfs walker, which refuses symlinks) and verifies it is owner-only.
// The returned close function closes what was opened.
func (s *Store) parentDir(op, parent string) (*exactfs.Dir, func(), error) {
	if parent == "" {
		if err := VerifyOwnerOnly(s.rootFile); err != nil {
			if s.isClosed() {
				// A Close won the race; say so rather than "use of closed file".
				return nil, nil, newErr(op, s.path, exactfs.CodeInvalidRequest, "the store is closed", os.ErrClosed)
			}
			return nil, nil, err
		}
		return s.root, func() {}, nil
	}
	d, err := s.root.OpenDir(parent)
	if err != nil {
		return nil, nil, err
	}
	f, err := d.File()
	if err == nil {
		err = VerifyOwnerOnly(f)
		f.Close()
	}
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	return d, func() { d.Close() }, nil
}

// dirOf checks rel (a file below the root, never the root itself) and
// opens its parent with parentDir: the directory, rel's last component,
// and the function that closes the directory.
func (s *Store) dirOf(op, rel string) (d *exactfs.Dir, base string, done func(), err error) {
	parent, base, err := cleanRel(op, rel, false)
	if err != nil {
		return nil, "", nil, err
	}
	d, done, err = s.parentDir(op, parent)
	if err != nil {
		return nil, "", nil, err
	}
	return d, base, done, nil
}

// AcquireFence takes the lease locks/.gjc-<name>.lock inside the store as
// its mutation fence. From then on every mutation asserts the lease before
// and after it commits, and fails with ErrLeaseLost (publishing nothing,
// where the lease is found lost before the commit) once the lease is gone,
// released included. A store has at most one fence.
func (s *Store) AcquireFence(ctx context.Context, name string, opts ...LeaseOption) (*Lease, error) {
	if err := validLeaseName(name); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, newErr("fence", s.path, exactfs.CodeInvalidRequest, "the store is closed", os.ErrClosed)
	}
	if s.fence != nil {
		return nil, newErr("fence", s.path, exactfs.CodeInvalidRequest, "the store already has a mutation fence", nil)
	}
	if err := s.checkBinding("fence", LocksDir); err != nil {
		return nil, err
	}
	if _, err := s.mkdir("fence", LocksDir); err != nil && !errors.Is(err, exactfs.ErrDestinationExists) {
		return nil, err
	}
	d, closeDir, err := s.parentDir("fence", LocksDir)
	if err != nil {
		return nil, err
	}
	_ = closeDir // the lease owns d from here on
	cfg := defaultLeaseConfig()
	for _, o := range opts {
		o(&cfg)
	}
	l, err := acquireIn(ctx, d, ".gjc-"+name, cfg)
	if err != nil {
		d.Close()
		return nil, err
	}
	l.ownsDir = true
	if err := s.checkBinding("fence", LocksDir); err != nil {
		return nil, errors.Join(err, l.Release())
	}
	s.fence = l
	return l, nil
}

func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *Store) fenceLease() *Lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fence
}

// before runs the checks that precede a mutation.
func (s *Store) before(op, rel string) error {
	if err := s.checkBinding(op, rel); err != nil {
		return err
	}
	if l := s.fenceLease(); l != nil {
		if err := l.AssertOwned(); err != nil {
			return &Error{Op: op, Path: s.join(rel), Code: CodeLeaseLost, Err: err, Detail: "refusing to mutate: the store's fence lease is lost"}
		}
	}
	return nil
}

// after runs the same checks once the mutation committed; a failure says
// so (Committed).
func (s *Store) after(op, rel string) error {
	err := s.before(op, rel)
	var e *Error
	if errors.As(err, &e) {
		e.Committed = true
	}
	return err
}

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
	id, err := d.Publish(base, data, 0o600, s.beforeCommit(op, rel))
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
func (s *Store) commitGuard(op, rel string, d *exactfs.Dir) (exactfs.WriteOption, func()) {
	var unlock func()
	opt := exactfs.BeforeCommit(func() error {
		hook.Fire(hook.StoreBeforeCommit, s.join(rel))
		u, err := lockDir(d)
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
func (s *Store) Replace(rel string, data []byte) (exactfs.Identity, error) {
	const op = "replace"
	d, base, done, err := s.dirOf(op, rel)
	if err != nil {
		return exactfs.Identity{}, err
	}
	defer done()
	guard, unlock := s.commitGuard(op, rel, d)
	id, err := d.WriteFile(base, data, 0o600, guard)
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
// file (SPEC §1 compares ctime only where a rule says so). The modification
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
func (s *Store) ReplaceExpected(rel string, data []byte, want exactfs.Identity) (exactfs.Identity, error) {
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
	// rather than publish a file that is not owner-only.
	if have.Mode.Perm() != 0o600 {
		return exactfs.Identity{}, newErr(op, s.join(rel), CodeModeMismatch,
			"the file is mode "+have.Mode.Perm().String()+", not owner-only 0600; its successor would inherit that", nil)
	}
	// exactfs compares every field; have differs from want at most in
	// ctime and link count, which the store does not compare (nlink is
	// checked by exactfs itself: it must be 1).
	guard, unlock := s.commitGuard(op, rel, d)
	id, err := d.ReplaceExpected(base, data, have, guard)
	unlock()
	return s.committed(op, rel, d, base, id, err)
}

// storeRetireName is the quarantine name of the store's exact unlinks.
func storeRetireName() string { return StoreRetirePrefix + exactfs.NewUUID() }

// StoreRetirePrefix starts the quarantine name of the store's exact
// unlinks; LeaseRetirePrefix that of lease reclaims. The reaper knows both.
const (
	StoreRetirePrefix = ".gjc-store-retire-"
	LeaseRetirePrefix = ".gjc-lock-retire-"
)

// RemoveExpected removes rel only if it is still the file captured as want
// (see SameFile), by exact unlink: a successor at the name survives.
func (s *Store) RemoveExpected(rel string, want exactfs.Identity) error {
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
	unlock, err := lockDir(d)
	if err != nil {
		return err
	}
	if err := s.before(op, rel); err != nil {
		unlock()
		return err
	}
	err = d.UnlinkExact(base, want, storeRetireName())
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

// isPrivateName reports whether name is a private residue name (SPEC §2.7)
// or one of the store's quarantine names.
func isPrivateName(name string) bool {
	if _, ok := exactfs.StagingTarget(name); ok {
		return true
	}
	return strings.HasPrefix(name, ".gjc-delete-") || strings.HasPrefix(name, exactfs.PlaceholderPrefix) ||
		strings.HasPrefix(name, StoreRetirePrefix) || strings.HasPrefix(name, LeaseRetirePrefix) ||
		strings.HasSuffix(name, exactfs.RemovingSuffix)
}
