package exactfs

import (
	"syscall"

	"github.com/exactfs/exactfs/internal/sys"
)

// Commit says whether a mutation changed the filesystem.
type Commit int

const (
	// NotCommitted: the filesystem was provably not changed.
	NotCommitted Commit = iota
	// Committed: the change was made.
	Committed
	// Unknown: the call failed in a way that does not prove either; the
	// caller must not clean up as if nothing happened.
	Unknown
)

func (c Commit) String() string {
	switch c {
	case NotCommitted:
		return "not_committed"
	case Committed:
		return "committed"
	}
	return "unknown"
}

// flagsUnavailable reports whether a rename-with-flags error means the
// filesystem or kernel lacks the flag. EINVAL is not proof that the
// primitive is missing (NFS and FUSE answer it for other reasons too), but
// it proves the rename did not happen, which is all a fallback needs.
func flagsUnavailable(err error) bool {
	return err == syscall.ENOSYS || err == syscall.EINVAL || err == syscall.ENOTSUP ||
		err == syscall.EOPNOTSUPP || err == sys.ErrUnsupported
}

// provablyNotCommitted lists the errnos that the kernel returns before it
// changes anything.
func provablyNotCommitted(err error) bool {
	switch err {
	case syscall.EEXIST, syscall.ENOENT, syscall.ENOTDIR, syscall.EISDIR, syscall.ELOOP,
		syscall.EXDEV, syscall.EACCES, syscall.EPERM, syscall.EROFS, syscall.ENAMETOOLONG,
		syscall.ENOTEMPTY, syscall.EBUSY, syscall.ENOSPC, syscall.EDQUOT, syscall.EMLINK:
		return true
	}
	return flagsUnavailable(err) || err == sys.ErrUnsupported
}

// RenameNoReplace renames src to dst, both relative to d, and fails with
// destination_exists if dst exists: renameat2(RENAME_NOREPLACE) on Linux,
// renameatx_np(RENAME_EXCL) on macOS. Where the filesystem lacks the flag it
// returns atomic_unavailable; it never falls back to a rename that could
// replace. The Commit result says whether the name changed.
func (d *Dir) RenameNoReplace(src, dst string) (Commit, error) {
	return pairOp(d, "rename", src, dst, renameNoReplaceAt)
}

// RenameNoReplace renames src to dst; see (*Dir).RenameNoReplace.
func RenameNoReplace(src, dst string) (Commit, error) {
	return pairOp(nil, "rename", src, dst, renameNoReplaceAt)
}

// LinkNoReplace makes dst a second name of the file at src (link(2), which
// never replaces), for filesystems without rename flags. The source name
// survives; the caller removes it. A symlink at src is linked as itself,
// never followed.
func (d *Dir) LinkNoReplace(src, dst string) (Commit, error) {
	return pairOp(d, "link", src, dst, linkAt)
}

// LinkNoReplace links src to dst; see (*Dir).LinkNoReplace.
func LinkNoReplace(src, dst string) (Commit, error) {
	return pairOp(nil, "link", src, dst, linkAt)
}

type pairFunc func(op, path string, sfd int, sbase string, dfd int, dbase string) (Commit, error)

func pairOp(d *Dir, op, src, dst string, f pairFunc) (Commit, error) {
	sp, sbase, err := resolve(op, d, src)
	if err != nil {
		return NotCommitted, err
	}
	defer sp.close()
	dp, dbase, err := resolve(op, d, dst)
	if err != nil {
		return NotCommitted, err
	}
	defer dp.close()
	return f(op, d.join(src)+" -> "+d.join(dst), sp.fd, sbase, dp.fd, dbase)
}

func renameNoReplaceAt(op, path string, sfd int, sbase string, dfd int, dbase string) (Commit, error) {
	before, _ := sys.Lstat(sfd, sbase)
	err := sys.RenameNoReplace(sfd, sbase, dfd, dbase)
	return settle(op, path, err, before, sfd, sbase, dfd, dbase, true)
}

func linkAt(op, path string, sfd int, sbase string, dfd int, dbase string) (Commit, error) {
	before, _ := sys.Lstat(sfd, sbase)
	err := sys.Link(sfd, sbase, dfd, dbase)
	return settle(op, path, err, before, sfd, sbase, dfd, dbase, false)
}

// settle turns the errno of a rename or link into a Commit. An error that
// the kernel returns before changing anything is NotCommitted; any other
// (EIO from a network filesystem, say) is resolved by looking: if dst now
// holds the source inode (and, for a rename, src is gone), it happened.
func settle(op, path string, err error, src sys.Stat, sfd int, sbase string, dfd int, dbase string, moved bool) (Commit, error) {
	if err == nil {
		return Committed, nil
	}
	e := wrap(op, path, err).(*Error)
	if flagsUnavailable(err) {
		e.Code = CodeAtomicUnavailable
		return NotCommitted, e
	}
	if provablyNotCommitted(err) {
		return NotCommitted, e
	}
	if src.Ino == 0 {
		return Unknown, e
	}
	dst, derr := sys.Lstat(dfd, dbase)
	if derr != nil || dst.Dev != src.Dev || dst.Ino != src.Ino {
		if derr == syscall.ENOENT {
			if _, serr := sys.Lstat(sfd, sbase); serr == nil {
				return NotCommitted, e
			}
		}
		return Unknown, e
	}
	if moved {
		if _, serr := sys.Lstat(sfd, sbase); serr == nil {
			return Unknown, e
		}
	}
	return Committed, nil
}
