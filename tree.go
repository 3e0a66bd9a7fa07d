package exactfs

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/internal/sys"
)

// TreeEntry is one object of a directory tree snapshot.
type TreeEntry struct {
	// Path is relative to the tree's root, with "/" separators; the root
	// itself is "".
	Path string
	// Identity of the entry; Mode tells a directory from a file, and files
	// carry the SHA-256 of their bytes.
	Identity Identity
}

// Tree is a snapshot of a directory tree taken without following links:
// every entry is a directory or a single-link regular file, in byte order
// of Path, the root first.
type Tree struct {
	Entries []TreeEntry
}

// Root returns the identity of the tree's root directory.
func (t *Tree) Root() Identity { return t.Entries[0].Identity }

// CaptureTree snapshots the directory tree at path. A symlink anywhere is
// reparse_point, a FIFO, socket or device is unsupported_entry, a file with
// more than one link is hard_link_unsupported and a name that is not UTF-8
// is not_utf8: RemoveTreeExact could not prove such a tree.
func CaptureTree(path string) (*Tree, error) { return captureTree(nil, path) }

// CaptureTree snapshots the tree at name beneath d; see CaptureTree.
func (d *Dir) CaptureTree(name string) (*Tree, error) { return captureTree(d, name) }

func captureTree(d *Dir, name string) (*Tree, error) {
	const op = "capture tree"
	p, base, err := resolve(op, d, name)
	if err != nil {
		return nil, err
	}
	defer p.close()
	return captureTreeAt(op, d.join(name), p.fd, base, nil, nil)
}

// RecaptureTree captures the tree at name beneath d again, for a caller
// that holds the snapshot snap of it (a judged tree about to be removed)
// and must not read whatever was planted since: the first entry that snap
// does not have, or that is not snap's object (another inode or type, a
// file of another size), is refused with identity_mismatch naming it
// before a byte of it is read, and no file is read past its size in snap.
// A tree that equals snap costs what snap's capture cost; any other costs
// no more. Compare the result with snap for the full proof (times,
// contents). RemoveTreeExact captures this way.
func (d *Dir) RecaptureTree(name string, snap *Tree) (*Tree, error) {
	const op = "capture tree"
	if snap == nil || len(snap.Entries) == 0 || snap.Entries[0].Path != "" {
		return nil, newErr(op, d.join(name), CodeInvalidRequest, "the snapshot is empty or not of a directory tree")
	}
	p, base, err := resolve(op, d, name)
	if err != nil {
		return nil, err
	}
	defer p.close()
	return captureTreeAt(op, d.join(name), p.fd, base, nil, snap.index())
}

// captureTreeAt captures the tree at base beneath dirfd; a non-nil lim
// bounds what the walk agrees to look at and read (CaptureTreeWithin), a
// non-nil snap what it agrees to find (RecaptureTree).
func captureTreeAt(op, path string, dirfd int, base string, lim *TreeLimits, snap treeIndex) (*Tree, error) {
	fd, err := openTreeDir(op, path, dirfd, base)
	if err != nil {
		return nil, err
	}
	defer sys.Close(fd)
	return captureTreeFD(op, path, fd, lim, snap)
}

// treeIndex is a snapshot's entries by path, for a capture that must find
// nothing else (RecaptureTree).
type treeIndex map[string]Identity

func (t *Tree) index() treeIndex {
	ix := make(treeIndex, len(t.Entries))
	for _, e := range t.Entries {
		ix[e.Path] = e.Identity
	}
	return ix
}

// stranger describes how the entry rel, with lstat st, is not the
// snapshot's (added since, another object, a file of another size), or ""
// (always "" for a nil index: no snapshot to hold to). It is asked before
// anything of the entry is read.
func (ix treeIndex) stranger(rel string, st sys.Stat) string {
	if ix == nil {
		return ""
	}
	e, ok := ix[rel]
	switch {
	case !ok && st.Mode.IsRegular():
		return fmt.Sprintf("%q was added after the snapshot (a file of %d bytes); it was not read", rel, st.Size)
	case !ok:
		return fmt.Sprintf("%q was added after the snapshot; it was not read", rel)
	case st.Dev != e.Dev || st.Ino != e.Ino || st.Mode.Type() != e.Mode.Type():
		return fmt.Sprintf("%q is another object than in the snapshot; it was not read", rel)
	case st.Mode.IsRegular() && st.Size != e.Size:
		return fmt.Sprintf("%q is %d bytes, %d in the snapshot; it was not read", rel, st.Size, e.Size)
	}
	return ""
}

func openTreeDir(op, path string, dirfd int, base string) (int, error) {
	h, err := walk(op, path, handle{fd: dirfd}, []string{base})
	if err != nil {
		return -1, err
	}
	return h.fd, nil
}

func captureTreeFD(op, path string, fd int, lim *TreeLimits, snap treeIndex) (*Tree, error) {
	st, err := sys.Fstat(fd)
	if err != nil {
		return nil, wrap(op, path, err)
	}
	t := &Tree{Entries: []TreeEntry{{Path: "", Identity: identityOf(st, [32]byte{})}}}
	if err := t.add(op, path, fd, "", 1, lim, snap); err != nil {
		return nil, err
	}
	sort.Slice(t.Entries, func(i, j int) bool { return t.Entries[i].Path < t.Entries[j].Path })
	return t, nil
}

// add adds the entries of the directory fd, at depth (its entries' depth:
// the root's are 1) below the tree's root, within lim when it is not nil,
// and holding to snap when it is not nil.
func (t *Tree) add(op, path string, fd int, prefix string, depth int, lim *TreeLimits, snap treeIndex) error {
	names, err := sys.ReadDirNames(fd)
	if err != nil {
		return wrap(op, joinShown(path, prefix), err)
	}
	sort.Strings(names)
	for _, n := range names {
		rel := prefix + n
		where := joinShown(path, rel)
		if !utf8.ValidString(n) {
			return &Error{Op: op, Path: where, Code: CodeNotUTF8, Detail: fmt.Sprintf("the name %q is not valid UTF-8", n)}
		}
		st, err := sys.Lstat(fd, n)
		if err != nil {
			return wrap(op, where, err)
		}
		if what := snap.stranger(rel, st); what != "" {
			return &Error{Op: op, Path: where, Code: CodeIdentityMismatch, Detail: what}
		}
		if what := lim.breaks(rel, len(t.Entries)+1, depth, st); what != "" {
			return tooLargeTree(op, path, what)
		}
		switch {
		case st.Mode.IsDir():
			h, err := walk(op, where, handle{fd: fd}, []string{n})
			if err != nil {
				return err
			}
			st, err := sys.Fstat(h.fd)
			if err == nil {
				t.Entries = append(t.Entries, TreeEntry{Path: rel, Identity: identityOf(st, [32]byte{})})
				err = t.add(op, path, h.fd, rel+"/", depth+1, lim, snap)
			} else {
				err = wrap(op, where, err)
			}
			h.close()
			if err != nil {
				return err
			}
		case st.Mode.IsRegular():
			max := int64(-1)
			if lim != nil {
				max = lim.FileSize
			}
			if snap != nil {
				// Never past the snapshot's size: a file that grows
				// after the lstat above changed, and is not read on.
				max = snap[rel].Size
			}
			_, id, err := captureAtMax(op, where, fd, n, false, max)
			if snap != nil && errors.Is(err, ErrRecordTooLarge) {
				err = grewPastSnapshot(op, where, rel, max)
			}
			if err != nil {
				return err
			}
			if id.Nlink == 0 {
				// Unlinked after it was opened: it has no name left.
				return &Error{Op: op, Path: where, Code: CodeNotFound, Detail: "the file was removed while it was read"}
			}
			if id.Nlink != 1 {
				return &Error{Op: op, Path: where, Code: CodeHardLinkUnsupported,
					Detail: fmt.Sprintf("the file has %d links; removing one name would not remove its bytes", id.Nlink)}
			}
			t.Entries = append(t.Entries, TreeEntry{Path: rel, Identity: id})
		default:
			e := typeError(op, where, st.Mode, "a directory or a regular file")
			if e.Code != CodeReparsePoint {
				e.Code = CodeUnsupportedEntry
			}
			return e
		}
	}
	return nil
}

// compareTrees returns a description of the first difference between want
// and have, or "" when they are the same. With detached set, the root's
// ctime is not compared: the rename that detached it changed it.
func compareTrees(want, have *Tree, detached bool) string {
	for i := 0; i < len(want.Entries) || i < len(have.Entries); i++ {
		switch {
		case i >= len(want.Entries):
			return fmt.Sprintf("%q was added after the snapshot", have.Entries[i].Path)
		case i >= len(have.Entries):
			return fmt.Sprintf("%q is gone since the snapshot", want.Entries[i].Path)
		}
		w, h := want.Entries[i], have.Entries[i]
		if w.Path != h.Path {
			if w.Path < h.Path {
				return fmt.Sprintf("%q is gone since the snapshot", w.Path)
			}
			return fmt.Sprintf("%q was added after the snapshot", h.Path)
		}
		wi, hi := w.Identity, h.Identity
		if detached && w.Path == "" {
			wi.CtimeNs, hi.CtimeNs = 0, 0
		}
		if wi != hi {
			return fmt.Sprintf("%q changed since the snapshot: %s", displayRel(w.Path), wi.diff(hi))
		}
	}
	return ""
}

func displayRel(p string) string {
	if p == "" {
		return "."
	}
	return p
}

// RemoveTreeExact removes the directory tree at path only if it is exactly
// the snapshot tree. It re-captures the tree and requires equality, detaches
// the root to <path>.removing with a no-replace rename (from that moment
// path is free for a successor), fsyncs the parent, verifies the detached
// tree again, and removes it bottom-up, verifying each entry before removing
// it. Any difference is identity_mismatch and the differing object stays.
// Each capture holds to the snapshot (RecaptureTree): an entry planted
// since, or a file grown since, is refused by name before a byte of it is
// read, so the removal never reads more than the snapshot's capture did.
//
// A crash after the detach leaves <path>.removing; calling RemoveTreeExact
// again with the same snapshot finishes the removal.
func RemoveTreeExact(path string, tree *Tree) error { return removeTree(nil, path, tree) }

// RemoveTreeExact removes the tree at name beneath d; see RemoveTreeExact.
func (d *Dir) RemoveTreeExact(name string, tree *Tree) error { return removeTree(d, name, tree) }

func removeTree(d *Dir, name string, tree *Tree) error {
	const op = "remove tree"
	path := d.join(name)
	if tree == nil || len(tree.Entries) == 0 || tree.Entries[0].Path != "" || !tree.Root().Mode.IsDir() {
		return newErr(op, path, CodeInvalidRequest, "the snapshot is empty or not of a directory")
	}
	p, base, err := resolve(op, d, name)
	if err != nil {
		return err
	}
	defer p.close()
	removing := base + RemovingSuffix
	if st, err := sys.Lstat(p.fd, removing); err == nil {
		root := tree.Root()
		if st.Dev != root.Dev || st.Ino != root.Ino {
			return &Error{Op: op, Path: path, Code: CodeIdentityMismatch,
				Detail: removing + " exists but is not the snapshot's directory; left alone"}
		}
		return removeDetached(op, path, p.fd, base, removing, tree, true)
	}
	// Held to the snapshot: whatever was planted in the tree since it was
	// judged is refused unread (RecaptureTree), however large.
	have, err := captureTreeAt(op, path, p.fd, base, nil, tree.index())
	if err != nil {
		return nothingRemoved(err)
	}
	if diff := compareTrees(tree, have, false); diff != "" {
		return &Error{Op: op, Path: path, Code: CodeIdentityMismatch, Detail: diff + "; nothing was removed"}
	}
	// The detach is by name: a successor that took the name after the
	// capture is what goes to <dir>.removing. removeDetached captures the
	// detached tree again and puts a stranger back.
	hook.Fire(hook.TreeCaptured, path)
	if err := sys.RenameNoReplace(p.fd, base, p.fd, removing); err != nil {
		e := wrap(op, path, err).(*Error)
		switch {
		case flagsUnavailable(err):
			e.Code = CodeAtomicUnavailable
			e.Detail = "the filesystem has no no-replace rename to detach the tree, so it cannot be removed without risking a successor; nothing was removed. Only a person can clear it here: make sure no process uses it, then remove it by hand"
		case err == syscall.EEXIST:
			e.Code = CodeQuarantineCollision
			e.Detail = removing + " already exists; nothing was moved"
		}
		return e
	}
	// The detach must reach the disk before the removal starts, so that
	// after a crash the tree is either whole at path or at path.removing.
	if err := syncDir(op, path, p.fd); err != nil {
		e := err.(*Error)
		e.Path = joinDir(path, removing)
		e.Residue = append(e.Residue, e.Path)
		e.Detail = "the tree was detached to " + removing + " but the directory could not be flushed, so nothing more was removed; calling again with the same snapshot finishes the removal"
		return e
	}
	hook.Fire(hook.TreeDetached, path)
	return removeDetached(op, path, p.fd, base, removing, tree, false)
}

// grewPastSnapshot is the refusal of a snapshot's file found larger than
// its snapshot size by the fstat before its read (it grew after the
// lstat that checked it): not read.
func grewPastSnapshot(op, where, rel string, size int64) error {
	return &Error{Op: op, Path: where, Code: CodeIdentityMismatch,
		Detail: fmt.Sprintf("%q grew past its size in the snapshot (%d bytes); it was not read", rel, size)}
}

// nothingRemoved is the error of removeTree's capture before the detach,
// which said nothing of the removal: the tree is where it was.
func nothingRemoved(err error) error {
	var e *Error
	if errors.As(err, &e) && e.Detail != "" {
		e.Detail += "; nothing was removed"
	}
	return err
}

// removeDetached removes the tree at the private name removing. In replay,
// entries the crashed removal already deleted may be missing, and
// directories may have changed by losing children.
func removeDetached(op, path string, dirfd int, base, removing string, tree *Tree, replay bool) error {
	fd, err := openTreeDir(op, path, dirfd, removing)
	if err != nil {
		return err
	}
	defer sys.Close(fd)
	if !replay {
		have, err := captureTreeFD(op, path, fd, nil, tree.index())
		var e *Error
		switch {
		case err != nil:
			// The detached tree cannot be proved (a hard link, symlink or
			// FIFO appeared in it): refuse, like a difference.
			if !errors.As(err, &e) {
				e = &Error{Op: op, Path: path, Code: CodeOf(err), Err: err}
			}
			if e.Detail == "" {
				e.Detail = describe(e.Code)
			}
		default:
			if diff := compareTrees(tree, have, true); diff != "" {
				e = &Error{Op: op, Path: path, Code: CodeIdentityMismatch, Detail: diff + " after the tree was detached"}
			}
		}
		if e != nil {
			// Put it back where it was if the name is still free.
			if rerr := sys.RenameNoReplace(dirfd, removing, dirfd, base); rerr != nil {
				e.Residue = append(e.Residue, joinDir(path, removing))
				e.Detail += "; the tree is left at " + removing + ": " + base + " was taken again"
				return e
			}
			e.Detail += "; nothing was removed and the tree was put back"
			return e
		}
	}
	detached := joinDir(path, removing)
	for i := len(tree.Entries) - 1; i >= 1; i-- {
		e := tree.Entries[i]
		if err := removeEntry(op, detached, fd, e, replay); err != nil {
			return err
		}
	}
	hook.Fire(hook.TreeEmptied, path)
	// rmdir is by name, and a rename can put another (empty) directory at
	// <dir>.removing: remove it only while it is still the directory fd is
	// open on. What remains is the instant between this check and the
	// rmdir, in which only an empty directory could be lost, never data.
	if err := sameDir(fd, dirfd, removing); err != nil {
		return &Error{Op: op, Path: path, Code: CodeIdentityMismatch, Err: err, Residue: []string{joinDir(path, removing)},
			Detail: removing + " is no longer the detached tree (" + err.Error() + "); what is there now is left alone"}
	}
	if err := sys.Rmdir(dirfd, removing); err != nil {
		if err == syscall.ENOTEMPTY || err == syscall.EEXIST {
			return &Error{Op: op, Path: path, Code: CodeIdentityMismatch, Residue: []string{joinDir(path, removing)},
				Detail: "an entry was added to the detached tree; it is left at " + removing}
		}
		return wrap(op, path, err)
	}
	return syncDir(op, path, dirfd)
}

// removeEntry removes the entry e of the detached tree open as rootfd,
// whose path is detached, after proving it is the snapshot's.
func removeEntry(op, detached string, rootfd int, e TreeEntry, replay bool) error {
	where := joinShown(detached, e.Path)
	comps := strings.Split(e.Path, "/")
	p, err := walk(op, where, handle{fd: rootfd}, comps[:len(comps)-1])
	if err != nil {
		if replay && CodeOf(err) == CodeNotFound {
			return nil
		}
		return err
	}
	defer p.close()
	base := comps[len(comps)-1]
	st, err := sys.Lstat(p.fd, base)
	if err == syscall.ENOENT && replay {
		return nil
	}
	if err != nil {
		return wrap(op, where, err)
	}
	if st.Dev != e.Identity.Dev || st.Ino != e.Identity.Ino || st.Mode.Type() != e.Identity.Mode.Type() {
		return &Error{Op: op, Path: where, Code: CodeIdentityMismatch, Detail: "not the object of the snapshot; left alone"}
	}
	if st.Mode.IsRegular() && st.Size != e.Identity.Size {
		return &Error{Op: op, Path: where, Code: CodeIdentityMismatch,
			Detail: fmt.Sprintf("%d bytes, %d in the snapshot; left alone, unread", st.Size, e.Identity.Size)}
	}
	if st.Mode.IsDir() {
		hook.Fire(hook.TreeEntryChecked, where)
		// As for the root (removeDetached): an empty directory renamed
		// over this one since the check above could still go here.
		if err := sameDirAt(p.fd, base, st); err != nil {
			return &Error{Op: op, Path: where, Code: CodeIdentityMismatch, Err: err, Detail: "not the directory of the snapshot any more; left alone"}
		}
		if err := sys.Rmdir(p.fd, base); err != nil {
			if err == syscall.ENOTEMPTY || err == syscall.EEXIST {
				return &Error{Op: op, Path: where, Code: CodeIdentityMismatch, Detail: "an entry was added after the snapshot; left alone"}
			}
			return wrap(op, where, err)
		}
		return nil
	}
	_, have, err := captureAtMax(op, where, p.fd, base, false, e.Identity.Size)
	if errors.Is(err, ErrRecordTooLarge) {
		err = grewPastSnapshot(op, where, e.Path, e.Identity.Size)
	}
	if err != nil {
		return err
	}
	if have != e.Identity {
		return &Error{Op: op, Path: where, Code: CodeIdentityMismatch, Detail: "changed since the snapshot: " + e.Identity.diff(have) + "; left alone"}
	}
	hook.Fire(hook.TreeEntryChecked, where)
	// Not unlink(2) by name: anyone who may write in the detached tree can
	// put a file at this name after the check. The exact unlink removes
	// only the inode and bytes just proved, and leaves a successor alone.
	return unlinkAt(op, where, p.fd, base, have, treeEntryQuarantine())
}

// sameDir proves that name in dirfd is the directory fd is open on.
func sameDir(fd, dirfd int, name string) error {
	st, err := sys.Fstat(fd)
	if err != nil {
		return err
	}
	return sameDirAt(dirfd, name, st)
}

// sameDirAt proves that name in dirfd is still the directory of st.
func sameDirAt(dirfd int, name string, st sys.Stat) error {
	at, err := sys.Lstat(dirfd, name)
	if err != nil {
		return err
	}
	if at.Dev != st.Dev || at.Ino != st.Ino || !at.Mode.IsDir() {
		return fmt.Errorf("%s now names another object", name)
	}
	return nil
}
