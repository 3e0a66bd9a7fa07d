//go:build !exactfs_portable

package exactfs

import (
	"fmt"

	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/internal/sys"
)

// MoveEmptyDir moves the empty directory src directly beneath d to the
// name dst beneath d, without replacing anything at dst, and returns it
// open. It is the exact move of a directory whose appearance at dst means
// something (statelock's transition claim, taken by renaming a spare claim
// directory onto the claim's name): dst comes into being, for one caller
// only, as exactly the empty directory that was proved. In order:
//
//   - src is opened as a directory without following a symlink (a symlink,
//     FIFO, device or file there is never opened, let alone moved), and
//     proved from the descriptor: accept (the caller's rule on the owner
//     and mode in its stat) must accept it, and it must hold no entry;
//   - its access and modification times are set to now, so that its mtime
//     says when it came to dst (a spare's says when it was put aside,
//     perhaps long ago);
//   - it is renamed, without replacing, to a fresh private name that only
//     this call knows (QuarantinePrefix + "movedir-" + a UUID), and that
//     name must then hold the very directory that was opened. If another
//     object was swapped in at src between the open and the rename, that
//     object is what moved: it is put back at src (without replacing) and
//     the move fails with ErrIdentityMismatch. The look is made at a name
//     nobody else uses, never at dst: there a successor's directory could
//     stand by then (the moved object judged and removed, dst made anew),
//     and putting "what is at dst" back would move that successor's;
//   - it is renamed from there to dst without replacing (renameat2
//     RENAME_NOREPLACE): when dst exists, it goes back to src (or, when src
//     was taken meanwhile, is removed: it is the empty directory proved)
//     and the move fails with an error matching fs.ErrExist.
//
// Errors: one matching fs.ErrExist (destination_exists) when dst exists;
// ErrIdentityMismatch when a swap was undone; ErrRestoreFailed when a
// swapped object could not be put back (it is at the private name, which
// Residue names); atomic_unavailable where the filesystem has no no-replace
// rename; any other when src is not an empty directory that accept
// accepts, or could not be prepared. In every case but the restore
// failure, nothing is left moved. The caller closes the returned Dir.
//
// A successful move costs one rename more than a rename straight to dst:
// the price of never looking at dst for what moved.
//
// Not guaranteed: entries created inside the directory after the
// emptiness check come along with it (dst is the proved directory, not a
// proved-empty one); the caller's rule decides who may write there.
func (d *Dir) MoveEmptyDir(src, dst string, accept func(st RawStat) bool) (*Dir, error) {
	var moved *Dir
	err := d.use("movedir", func(dirfd int) error {
		const op = "movedir"
		path := func() string { return d.join(src) + " -> " + d.join(dst) }
		fd, err := sys.OpenDir(dirfd, src)
		if err != nil {
			return wrap(op, d.join(src), err)
		}
		st, err := sys.Fstat(fd)
		switch {
		case err != nil:
		case !accept(st):
			err = newErr(op, d.join(src), CodeUnsupportedEntry, "the directory's owner or mode is refused by the caller's rule; nothing was moved")
		case !emptyAt(fd, false):
			err = newErr(op, d.join(src), CodeUnsupportedEntry, "the directory is not empty; nothing was moved")
		default:
			err = sys.TouchNow(fd)
		}
		if err != nil {
			sys.Close(fd)
			return wrap(op, d.join(src), err)
		}
		if hook.IsSet(hook.MoveDirChecked) {
			hook.Fire(hook.MoveDirChecked, d.join(src))
		}
		aside := moveAsideName()
		if err := sys.RenameNoReplace(dirfd, src, dirfd, aside); err != nil {
			sys.Close(fd)
			e := wrap(op, path(), err).(*Error)
			if flagsUnavailable(err) {
				e.Code = CodeAtomicUnavailable
			}
			return e
		}
		if hook.IsSet(hook.MoveDirMoved) {
			hook.Fire(hook.MoveDirMoved, d.join(aside))
		}
		if got, err := sys.Lstat(dirfd, aside); err != nil || got.Dev != st.Dev || got.Ino != st.Ino {
			sys.Close(fd)
			// What moved is not what was proved: someone swapped src
			// after the open. It goes back; nobody else knows aside.
			if rerr := sys.RenameNoReplace(dirfd, aside, dirfd, src); rerr != nil {
				return &Error{Op: op, Path: path(), Code: CodeRestoreFailed, Err: rerr, Residue: []string{d.join(aside)},
					Detail: fmt.Sprintf("%s was replaced between its proof and its move, and putting the object that moved back failed; it is now at %s", d.join(src), d.join(aside))}
			}
			return newErr(op, path(), CodeIdentityMismatch, d.join(src)+" was replaced between its proof and its move; the object that moved was put back")
		}
		if err := sys.RenameNoReplace(dirfd, aside, dirfd, dst); err != nil {
			sys.Close(fd)
			// dst is taken (or the name cannot be made): the proved empty
			// directory goes back to src, or, when src was taken meanwhile,
			// is removed (it is ours and empty; a failure leaves an empty
			// private name that the residue rules remove).
			if sys.RenameNoReplace(dirfd, aside, dirfd, src) != nil {
				sys.Rmdir(dirfd, aside)
			}
			return wrap(op, path(), err)
		}
		moved = heldDir(fd, d.join(dst), st)
		return nil
	})
	return moved, err
}

// MoveHeldDir moves the directory held is open on from src directly
// beneath d to dst beneath d, without replacing anything at dst, when src
// still names that directory and it is empty (read through held from its
// start): the release of a directory taken with MoveEmptyDir or
// CreateDir. err is set, and nothing moved, when src no longer names the
// held directory (ErrIdentityMismatch, or the lstat's error); moved is
// false with a nil error when the directory is not empty or the rename was
// refused (dst exists, no no-replace rename here), for the caller to
// remove it otherwise. With dst "", it only proves that src names held.
//
// It proves the directory before the rename, not after: the caller vouches
// that nobody else renames src while it holds it (statelock's claim is its
// holder's until released), and a look after would cost the lock's hot
// path one more system call per release. held stays open.
func (d *Dir) MoveHeldDir(held *Dir, src, dst string) (moved bool, err error) {
	err = d.use("movedir", func(dirfd int) error {
		st, err := sys.Lstat(dirfd, src)
		if err != nil {
			return wrap("movedir", d.join(src), err)
		}
		if st.Dev != held.dev || st.Ino != held.ino {
			return newErr("movedir", d.join(src), CodeIdentityMismatch,
				fmt.Sprintf("it names inode %d now, not the directory held open (inode %d); nothing was moved", st.Ino, held.ino))
		}
		if dst == "" {
			return nil
		}
		empty := false
		if err := held.use("movedir", func(fd int) error { empty = emptyAt(fd, true); return nil }); err != nil {
			return err
		}
		moved = empty && sys.RenameNoReplace(dirfd, src, dirfd, dst) == nil
		return nil
	})
	return moved, err
}

// emptyAt reports whether the directory open at fd has no entries besides
// "." and "..". rewind: fd was read before; read it from the start.
func emptyAt(fd int, rewind bool) bool {
	if rewind && sys.Seek(fd, 0) != nil {
		return false
	}
	empty, err := sys.DirEmpty(fd)
	return err == nil && empty
}
