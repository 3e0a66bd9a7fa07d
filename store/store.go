package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/exactfs/exactfs"
)

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

func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}
