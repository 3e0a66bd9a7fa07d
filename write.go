package exactfs

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/internal/sys"
)

// pendingFile is a write in the shape of renameio's PendingFile: the
// bytes, complete and fsynced under a private name beside their
// destination, waiting for exactly one commit that gives them the
// destination's name (Publish: no-replace rename or link; WriteFile:
// rename; ReplaceExpected: exchange and verify) or for discard, which
// removes the private name while it still holds them. done makes a commit
// durable and returns the identity of what was written. Every write
// primitive is: check the destination, stage, ready (the caller's last
// check), commit, done.
type pendingFile struct {
	op, path string // the operation and the destination, for errors
	dirfd    int    // the destination's directory (not owned)
	base     string // the destination's name in it
	name     string // the private name
	fd       int    // the staged file, until closeFD
	st       sys.Stat
	sum      [32]byte // the SHA-256 of the staged bytes
	// landedSt is the lstat with which landed proved that the name holds
	// the staged inode, taken after the commit: finish returns it as the
	// identity of what was written instead of looking again. A step that
	// changes the inode's link count or ctime after landed (the link
	// fallback's removal of the staging name) clears it.
	landedSt *sys.Stat
}

// stage writes data under a private name beside base in dirfd, with mode
// perm and, when prev is not nil, the owner and group of prev (the file it
// will replace; see own), and fsyncs it.
func stage(op, path string, dirfd int, base, suffix string, data []byte, src io.Reader, perm fs.FileMode, prev *owner) (*pendingFile, error) {
	s, err := createPending(op, path, dirfd, base, suffix, os.O_WRONLY)
	if err != nil {
		return nil, err
	}
	fd := s.fd
	if src != nil {
		if s.sum, err = s.copyFrom(src); err != nil {
			return nil, s.failed(err)
		}
	} else {
		if err := sys.Write(fd, data); err != nil {
			return nil, s.failed(wrap(op, path, err))
		}
		s.sum = sum256(data)
	}
	// The file is created 0600 and owned by the caller, and only given its
	// owner and mode through the descriptor once its bytes are complete:
	// the umask cannot narrow the mode, and until then no one else can
	// open it (once it is theirs, the new owner can, as it could open the
	// file at the name a moment later).
	if err := s.own(prev, perm); err != nil {
		return nil, s.failed(err)
	}
	// The bytes (and the owner and mode) must be on disk before a name
	// points at them, or a power cut after the rename leaves an empty or
	// torn file at the name. Ordering them before the rename suffices
	// (FsyncBarrier: F_BARRIERFSYNC on macOS, plain fsync elsewhere),
	// because no commit is reported durable before done, whose syncDir
	// flushes the directory with Fsync (F_FULLFSYNC: the drive's whole
	// cache, these bytes included), on every path that returns success
	// (publish, WriteFile, ReplaceExpected); a failure after the commit
	// promises nothing, and the barrier still keeps the rename from
	// reaching the medium before the bytes. That saves one of the two
	// full drive flushes per write on a Mac.
	if err := sys.FsyncBarrier(fd); err != nil {
		return nil, s.failed(&Error{Op: op, Path: path, Code: CodeDurabilityFailed, Err: err})
	}
	return s, nil
}

// stagingChunk is how much of a ContentFrom reader a staging write copies
// at a time.
const stagingChunk = 256 << 10

// copyFrom writes everything r gives, to its end, to the staged file and
// returns its SHA-256. A write error (a full disk) is the write's error; a
// read error is io_error, saying how far the copy got.
func (s *pendingFile) copyFrom(r io.Reader) ([32]byte, error) {
	h := sha256.New()
	buf := make([]byte, stagingChunk)
	var n int64
	for {
		k, rerr := r.Read(buf)
		if k > 0 {
			if err := sys.Write(s.fd, buf[:k]); err != nil {
				return [32]byte{}, wrap(s.op, s.path, err)
			}
			h.Write(buf[:k])
			n += int64(k)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return [32]byte{}, &Error{Op: s.op, Path: s.path, Code: CodeIOError, Err: rerr,
				Detail: fmt.Sprintf("reading the new bytes failed after %d bytes; nothing was written at the name", n)}
		}
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum, nil
}

// owner is who a replacement must belong to: its predecessor's owner and
// group, from the stat of the file at the name (see WriteFile) or from the
// descriptor ReplaceExpected captured it through.
type owner struct{ uid, gid uint32 }

func ownerOf(st sys.Stat) *owner { return &owner{uid: st.Uid, gid: st.Gid} }

// own is the one step that decides who a staged file belongs to: a replace
// must not silently change who may read or write the state at the name (a
// root one-off would hand a service's file to root, and the service would
// fail on its next write). It gives the staged file prev's owner and group
// (fchown, only where they differ from the creator's) and then mode perm
// (fchmod). root can give any owner. Any other caller keeps what it may: a
// group it belongs to, its own files. Where the owner or group cannot be
// kept (another uid's file; a group the caller is not in), it refuses,
// before anything is committed, with an error that names the owner and
// says what to do: a replacement that belongs to the caller would lock the
// owner out, which is what the refusal is for. In a shared sticky
// directory another uid's file is refused even for root (sharedSticky).
// Only the permission bits are set (never setuid, setgid or sticky), and
// neither ACLs nor other extended attributes are copied.
func (s *pendingFile) own(prev *owner, perm fs.FileMode) error {
	if prev != nil && (prev.uid != s.st.Uid || prev.gid != s.st.Gid) {
		uid, gid := -1, -1
		if prev.uid != s.st.Uid {
			if err := s.sharedSticky(*prev); err != nil {
				return err
			}
			uid = int(prev.uid)
		}
		if prev.gid != s.st.Gid {
			gid = int(prev.gid)
		}
		if err := sys.Fchown(s.fd, uid, gid); err != nil {
			return ownerRefused(s.op, s.path, *prev, uid != -1, err)
		}
	}
	if s.st.Mode.Perm() != perm.Perm() {
		if err := sys.Fchmod(s.fd, uint32(perm.Perm())); err != nil {
			return wrap(s.op, s.path, err)
		}
	}
	return nil
}

// sharedSticky refuses to give the staged file to prev's owner, another
// uid, when the directory is a shared sticky one (/tmp, a spool: sticky
// and writable by group or others) that prev's owner does not own. There
// anyone may plant a file at a name another user will write (root's
// predictable /tmp path), and keeping the planter as the owner would hand
// it what root writes; taking the file from its owner instead would be the
// silent change the ownership step exists to prevent. Neither is right, so
// the caller is told, with nothing changed. In a directory of the file's
// owner, or a non-sticky one, the owner controls the name anyway.
func (s *pendingFile) sharedSticky(prev owner) error {
	dir, err := sys.Fstat(s.dirfd)
	if err != nil {
		return wrap(s.op, s.path, err)
	}
	return stickyRefusal(s.op, s.path, dir, prev.uid)
}

// stickyRefusal is sharedSticky's refusal for a file of uid beneath the
// directory whose stat is dir, or nil.
func stickyRefusal(op, path string, dir sys.Stat, uid uint32) error {
	if dir.Mode&fs.ModeSticky == 0 || dir.Mode.Perm()&0o022 == 0 || dir.Uid == uid {
		return nil
	}
	return &Error{Op: op, Path: path, Code: CodePermissionDenied,
		Detail: fmt.Sprintf("refusing to replace it: the file belongs to %s and sits in a shared sticky directory "+
			"(mode %04o, owned by %s), where anyone may plant a file at a name; giving the new file that owner would hand "+
			"what this process writes to %s, and making it this process's would take the file from its owner. Nothing was changed. "+
			"Write it as %s, or remove it first if the name should be yours",
			userName(uid), uint32(dir.Mode.Perm())|0o1000, userName(dir.Uid), userName(uid), userName(uid))}
}

// replaceRefusal is the refusal that own would give, because of its owner,
// to a replace of the file whose stat is st beneath the directory dirfd,
// when it can be told before anything is staged or read
// (CaptureReplaceable): another uid's file in a shared sticky directory
// (sharedSticky), for any caller. Whether a caller that is not root may
// give a successor the file's owner is left to own, which asks the kernel:
// the uid a file reads as (an NFS export that squashes every uid, a vfat
// or sshfs mount with uid=) need not be the caller's, although the files
// the caller makes there read the same. Windows has no uids to keep.
func replaceRefusal(op, path string, dirfd int, st sys.Stat) error {
	if runtime.GOOS == "windows" || st.Uid == uint32(euid()) {
		return nil
	}
	dir, err := sys.Fstat(dirfd)
	if err != nil {
		return wrap(op, path, err)
	}
	return stickyRefusal(op, path, dir, st.Uid)
}

// euid is the process's effective uid, asked once: replaceRefusal's only
// use of it is to skip its directory stat for the caller's own files.
var euid = sync.OnceValue(os.Geteuid)

// ownerRefused is the error of a replace that cannot give its successor
// the predecessor's owner (byUid) or group.
func ownerRefused(op, path string, prev owner, byUid bool, err error) error {
	// EINVAL: the owner has no mapping in this user namespace.
	if err != syscall.EPERM && err != syscall.EACCES && err != syscall.EINVAL {
		return wrap(op, path, err)
	}
	me := os.Geteuid()
	var detail string
	if byUid {
		detail = fmt.Sprintf("refusing to replace it: the file belongs to %s, group %s, and this process (uid %d) cannot give "+
			"the new file that owner, so the replacement would be uid %d's and lock its owner out. Nothing was changed. "+
			"Write it as %s or as root; to make the file yours on purpose, remove it first and write it anew",
			userName(prev.uid), groupName(prev.gid), me, me, userName(prev.uid))
	} else {
		detail = fmt.Sprintf("refusing to replace it: the file's group is %s, which this process (uid %d) is not a member of, "+
			"so the new file could not keep it and the group would lose its access. Nothing was changed. "+
			"Write it as a member of that group or as root; to give the file your own group on purpose, remove it first and write it anew",
			groupName(prev.gid), me)
	}
	return &Error{Op: op, Path: path, Code: CodePermissionDenied, Err: err, Detail: detail}
}

func userName(uid uint32) string {
	id := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(id); err == nil && u.Username != "" {
		return u.Username + " (uid " + id + ")"
	}
	return "uid " + id
}

func groupName(gid uint32) string {
	id := strconv.FormatUint(uint64(gid), 10)
	if g, err := user.LookupGroupId(id); err == nil && g.Name != "" {
		return g.Name + " (gid " + id + ")"
	}
	return "gid " + id
}

// createPending creates the private file of a pending write beside base in
// dirfd: exclusive, no-follow, mode 0600, opened with access (os.O_WRONLY
// or os.O_RDWR), its inode recorded before anything else happens to it.
func createPending(op, path string, dirfd int, base, suffix string, access int) (*pendingFile, error) {
	name := stagingName(base, suffix)
	fd, err := sys.Open(dirfd, name, os.O_CREATE|os.O_EXCL|access, 0o600)
	if err == syscall.ENAMETOOLONG {
		return nil, &Error{Op: op, Path: path, Code: CodeInvalidRequest, Err: err,
			Detail: fmt.Sprintf("the name is too long to be staged: the private staging name adds %d bytes to it", len(name)-len(base))}
	}
	if err != nil {
		return nil, wrap(op, path, err)
	}
	s := &pendingFile{op: op, path: path, dirfd: dirfd, base: base, name: name, fd: fd}
	// The inode is recorded first, so that every later failure can remove
	// the staging name while it still holds this file, and only then.
	if s.st, err = sys.Fstat(fd); err != nil {
		sys.Close(fd)
		return nil, wrap(op, path, err)
	}
	hook.Fire(hook.StageCreated, path)
	return s, nil
}

func (s *pendingFile) closeFD() {
	if s.fd >= 0 {
		sys.Close(s.fd)
		s.fd = -1
	}
}

// discard removes the staging name, but only while it still holds the
// staged inode: a name that now holds something else is not ours. It
// reports false when the name may still hold our file: the lstat or the
// unlink failed (EIO, EROFS).
func (s *pendingFile) discard() bool {
	s.closeFD()
	st, err := sys.Lstat(s.dirfd, s.name)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && (st.Dev != s.st.Dev || st.Ino != s.st.Ino)) {
		return true
	}
	return err == nil && sys.Unlink(s.dirfd, s.name) == nil
}

// failed discards s after a failure before the commit and returns err,
// naming the staged file as residue when it could not be removed.
func (s *pendingFile) failed(err error) error {
	if !s.discard() {
		if e, ok := err.(*Error); ok {
			e.Residue = s.residue()
		}
	}
	return err
}

// residue names the private name, for an error that leaves it behind.
func (s *pendingFile) residue() []string {
	return []string{joinDir(s.path, s.name)}
}

// ready fires the staged hook, runs the caller's BeforeCommit check and
// proves that the staging name still holds the staged file (stillStaged),
// discarding the file if either refuses.
func (s *pendingFile) ready(o writeOptions) error {
	hook.Fire(hook.Staged, s.path)
	if err := o.commit(s); err != nil {
		return err
	}
	if err := s.stillStaged(); err != nil {
		return s.failed(err)
	}
	return nil
}

// stillStaged is the last check before a commit: the rename, link or
// exchange that commits acts on the staging name, not on our descriptor,
// so the name must still hold the inode we created and wrote (the fstat of
// our descriptor at its creation against an lstat of the name). A file
// renamed over the staging name (another process that can write the
// directory) would otherwise be committed in our place and reported as
// our success. On a mismatch nothing is committed and what is at the
// staging name is left alone (failed removes the name only while it holds
// our inode).
//
// A rename is by name, so a window remains between this lstat and the
// rename(2): a substitution there is committed. landed, right after the
// commit, sees it and reports an unknown outcome instead of success.
func (s *pendingFile) stillStaged() error {
	st, err := sys.Lstat(s.dirfd, s.name)
	if err == nil && st.Dev == s.st.Dev && st.Ino == s.st.Ino {
		hook.Fire(hook.Committing, s.path)
		return nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return wrap(s.op, s.path, err)
	}
	what := "was removed"
	if err == nil {
		what = fmt.Sprintf("now holds inode %d, not the file this call wrote (inode %d)", st.Ino, s.st.Ino)
	}
	return &Error{Op: s.op, Path: s.path, Code: CodeIdentityMismatch,
		Detail: fmt.Sprintf("the private staging name %s %s: another process replaced or removed it; "+
			"nothing was committed, and whatever is at the staging name now is left alone", s.name, what)}
}

// landed proves, right after the commit, that the name holds the inode we
// staged. Before that proof a name holding anything else is no successor
// of ours: it may be a file renamed over the staging name in the window
// stillStaged leaves, which the commit then moved to the name, or a
// writer's successor that came within microseconds of our commit. The two
// cannot be told apart, so the result is outcome_unknown (never success,
// and never an identity: none would describe what is at the name). After
// this proof a successor is just that (see finish). residue lists what
// the commit left under a private name that the caller keeps.
func (s *pendingFile) landed(residue ...string) error {
	st, err := sys.Lstat(s.dirfd, s.base)
	if err == nil && st.Dev == s.st.Dev && st.Ino == s.st.Ino {
		s.landedSt = &st
		return nil
	}
	s.closeFD()
	found, cause := "nothing", error(nil)
	if err == nil {
		found = fmt.Sprintf("inode %d", st.Ino)
	} else if !errors.Is(err, fs.ErrNotExist) {
		found, cause = "something that could not be examined", err
	}
	return &Error{Op: s.op, Path: s.path, Code: CodeOutcomeUnknown, Err: cause, Residue: residue,
		Detail: fmt.Sprintf("the commit was made, but the name then held %s, not the file this call wrote (inode %d): "+
			"either another process replaced the private staging name just before the commit, which moved its file to the name, "+
			"or another writer replaced the name just after it; read the file to learn what it holds", found, s.st.Ino)}
}

// done makes a commit durable (finish), closes the staged descriptor, and
// reports a cleanup that failed after the commit (pending) with the
// identity of what was written.
func (s *pendingFile) done(pending error, o writeOptions) (Identity, error) {
	id, err := s.finish(o)
	s.closeFD()
	return committedWith(id, err, pending)
}

func syncDir(op, path string, dirfd int) error {
	if err := sys.Fsync(dirfd); err != nil {
		return &Error{Op: op, Path: path, Code: CodeDurabilityFailed, Err: err,
			Detail: "the change is made but the directory could not be flushed; it may not survive a power cut"}
	}
	return nil
}

// Publish creates path with data and mode perm, and never replaces: if path
// exists, it returns destination_exists and changes nothing. The file is
// staged under a private name, fsynced, and moved into place with
// RenameNoReplace (or, where the filesystem lacks rename flags, link(2) and
// an unlink of the staging name); then the directory is fsynced. After
// Publish returns, the file survives a power cut; a crash before that leaves
// no file at path, or the whole file, and residue only under a name that
// StagingTarget recognizes. If the file was published but the staging link
// of the fallback could not be removed, the error is cleanup_pending with
// the residue's path, and the returned Identity (of the published, durable
// file) is valid.
//
// The mode is perm narrowed by the process's umask, as os.WriteFile and
// open(2) narrow it (0o666 gives 0644 under the usual 022); ExactPerm
// gives exactly perm.
//
// The commit is proved as WriteFile's is: a file renamed over the private
// name is never published as this call's (identity_mismatch before the
// rename, outcome_unknown if it came in the window just before it), and
// the returned Identity always describes what this call wrote.
func Publish(path string, data []byte, perm fs.FileMode, opts ...WriteOption) (Identity, error) {
	return publish(nil, path, data, perm, makeOptions(opts))
}

// Publish creates name beneath d; see Publish.
func (d *Dir) Publish(name string, data []byte, perm fs.FileMode, opts ...WriteOption) (Identity, error) {
	return publish(d, name, data, perm, makeOptions(opts))
}

func publish(d *Dir, name string, data []byte, perm fs.FileMode, o writeOptions) (Identity, error) {
	const op = "publish"
	path := d.join(name)
	if err := o.content(op, path, data); err != nil {
		return Identity{}, err
	}
	p, base, err := resolve(op, d, name)
	if err != nil {
		return Identity{}, err
	}
	defer p.close()
	// A name that is already taken is refused before anything is written
	// or fsynced: a contended lock costs one lstat, not two flushes. The
	// no-replace rename below still decides a race.
	if _, err := sys.Lstat(p.fd, base); err == nil {
		return Identity{}, &Error{Op: op, Path: path, Code: CodeDestinationExists, Err: syscall.EEXIST}
	}
	s, err := stage(op, path, p.fd, base, StagingSuffix, data, o.src, o.perm(perm), nil)
	if err != nil {
		return Identity{}, err
	}
	if err := s.ready(o); err != nil {
		return Identity{}, err
	}
	linked, err := renameOrLink(p.fd, s.name, p.fd, base, func() {
		// NFS renames a name that is still open to .nfsXXXX on unlink, which
		// would leave a second link to the published file: close first,
		// keeping the stat of the finished file for finish.
		if st, err := sys.Fstat(s.fd); err == nil {
			s.st = st
		}
		s.closeFD()
	})
	if err != nil {
		c, e := settle(op, path, err, s.st, p.fd, s.name, p.fd, base, !linked)
		switch {
		case c == NotCommitted:
			if errno, ok := err.(syscall.Errno); ok && errno == syscall.EEXIST {
				return Identity{}, s.failed(&Error{Op: op, Path: path, Code: CodeDestinationExists, Err: err})
			}
			return Identity{}, s.failed(e)
		case c == Unknown:
			e := e.(*Error)
			e.Residue = s.residue()
			e.Detail = "the result of the rename is unknown; the staged file is kept"
			s.closeFD()
			return Identity{}, e
		}
	}
	if linked {
		if err := s.landed(s.residue()...); err != nil {
			return Identity{}, err
		}
	} else if err := s.landed(); err != nil {
		return Identity{}, err
	}
	var pending error
	if linked {
		// The staging name is a second link to the published file; remove
		// it only while it still names our inode. That changes the inode's
		// link count and ctime: finish must look again.
		s.landedSt = nil
		hook.Fire(hook.BeforeCleanup, path)
		if st, err := sys.Lstat(p.fd, s.name); err == nil && st.Dev == s.st.Dev && st.Ino == s.st.Ino {
			if err := sys.Unlink(p.fd, s.name); err != nil {
				pending = &Error{Op: op, Path: path, Code: CodeCleanupPending, Err: err, Residue: s.residue(),
					Detail: "published, but the staging name (a second link to the file) could not be removed"}
			}
		}
	}
	return s.done(pending, o)
}

// renameOrLink is the no-replace commit of Publish and PublishStaged: it
// gives the file at sfd/sbase the name dfd/dbase with RenameNoReplace or,
// where the filesystem lacks rename flags (or hook.ForceLinkFallback is
// set), with link(2), after which sbase is a second link the caller
// removes once it proved both names hold its inode. beforeLink, if not
// nil, runs just before the link. It returns whether it linked and the
// error of the call that decided, for settle.
func renameOrLink(sfd int, sbase string, dfd int, dbase string, beforeLink func()) (linked bool, err error) {
	err = sys.RenameNoReplace(sfd, sbase, dfd, dbase)
	forced := hook.IsSet(hook.ForceLinkFallback)
	if !forced && !flagsUnavailable(err) {
		return false, err
	}
	if forced && err == nil {
		// Undo the rename the test asked us to pretend had failed.
		if err := sys.RenameNoReplace(dfd, dbase, sfd, sbase); err != nil {
			panic("exactfs: test hook could not undo a rename: " + err.Error())
		}
	}
	if beforeLink != nil {
		beforeLink()
	}
	return true, sys.Link(sfd, sbase, dfd, dbase)
}

// committedWith is the result of a write that committed: finish's error
// (durability) wins; otherwise a cleanup that failed after the commit is
// reported as cleanup_pending together with the identity of what was
// written, because the change itself is made and durable.
func committedWith(id Identity, err, pending error) (Identity, error) {
	if err != nil {
		return Identity{}, err
	}
	return id, pending
}

// finish makes the committed change durable and returns the identity of
// what this call wrote. A successor may already have replaced or removed
// the name (a writer that does not compare, a reaper): that does not undo
// this commit, so it is no failure of this call, and reporting one
// (identity_mismatch means "nothing was changed") would make a
// compare-and-swap loop apply its update twice. The caller's next
// compare-and-swap sees the successor.
func (s *pendingFile) finish(o writeOptions) (Identity, error) {
	if o.afterCommit != nil {
		o.afterCommit()
	}
	hook.Fire(hook.Committed, s.path)
	// The identity of what was written is the inode's stat after the
	// commit. landed took it, proving the name held our inode, and nothing
	// of ours changed the inode since: it is reused, not taken again (one
	// lstat per write). A successor that replaced the name after landed
	// does not change what this call wrote.
	var st sys.Stat
	if s.landedSt != nil {
		st = *s.landedSt
	} else if now, err := sys.Lstat(s.dirfd, s.base); err == nil && now.Dev == s.st.Dev && now.Ino == s.st.Ino {
		st = now
	} else {
		st = s.st
		if s.fd >= 0 {
			if now, err := sys.Fstat(s.fd); err == nil {
				st = now
			}
		}
	}
	if err := syncDir(s.op, s.path, s.dirfd); err != nil {
		return Identity{}, err
	}
	return identityOf(st, s.sum), nil
}

// WriteFile replaces path atomically and durably with data and mode perm,
// like os.WriteFile but without a moment at which path is empty or torn:
// the bytes are staged under a private name and fsynced, renamed over path,
// and the directory is fsynced. An existing path that is not a regular file
// (a symlink, FIFO, directory) is refused and left alone.
//
// The new file keeps the owner and group of the file it replaces (from an
// lstat of path, which the rename then replaces, or from the caller's
// capture passed with Predecessor), so that root's one-off
// write of a service's state file leaves it the service's. A caller that
// cannot give it that owner (another uid's file, and the caller is not
// root) or group (one the caller is not a member of) is refused with
// permission_denied, naming the owner, and nothing is changed. So is even
// root where the file belongs to another uid that does not own the
// directory and the directory is a shared sticky one (/tmp): there the
// owner may be anyone who planted a file at the name, and would be handed
// what the caller writes. A new file belongs to the caller, as with
// os.WriteFile.
//
// The new file's mode is perm narrowed by the process's umask, as
// os.WriteFile and open(2) narrow it when they create a file (0o666 gives
// 0644 under the usual 022, never a world-writable file), whether or not
// path exists. With ExactPerm it is exactly perm: callers that keep the
// old file's mode pass that mode with ExactPerm (statelock's Update and
// the exactfs write command do), since a umask must not silently change
// who may read state that already exists. Only permission bits are set;
// ACLs and other extended attributes of the old file are not carried over.
//
// A regular file at path with more than one name (a hard link) is replaced
// at this name only: the other names keep the old inode and bytes.
// ReplaceExpected and UnlinkExact refuse such a file
// (hard_link_unsupported), and so do the exactfs command's write and
// update; a caller that wants that answer checks Identity.Nlink first.
//
// The commit is proved: the private name must still hold the staged file
// just before the rename, and path must hold it just after. A file another
// process renamed over the private name before the rename is never
// committed (identity_mismatch, that file left alone); one that came in
// the few system calls between that check and the rename is committed by
// it, and is reported as outcome_unknown, never as success, as is a
// successor that replaced path in the instant right after the rename
// (the two cannot be told apart).
func WriteFile(path string, data []byte, perm fs.FileMode, opts ...WriteOption) (Identity, error) {
	return writeFile(nil, path, data, perm, makeOptions(opts))
}

// WriteFile replaces name beneath d; see WriteFile.
func (d *Dir) WriteFile(name string, data []byte, perm fs.FileMode, opts ...WriteOption) (Identity, error) {
	return writeFile(d, name, data, perm, makeOptions(opts))
}

// writeFile's system calls, each with what it proves (issue 25 counted
// them; none is left that proves nothing):
//   - lstat of the name: no proof, the successor's owner and group and the
//     refusal of a non-regular file there now (skipped with Predecessor);
//   - openat O_CREAT|O_EXCL and fstat of the new descriptor: the staged
//     inode, recorded before anything else, which stillStaged, landed and
//     discard compare names against (and own its owner and mode against);
//   - write, then fsync: the bytes are on disk before a name points at them;
//   - (fchown, fchmod only where own must change something);
//   - lstat of the staging name (stillStaged): the rename moves our file;
//   - rename, then lstat of the name (landed): the name holds our file, and
//     that lstat is also the returned identity (finish does not look again);
//   - fsync of the directory: the rename survives a power cut;
//   - close.
func writeFile(d *Dir, name string, data []byte, perm fs.FileMode, o writeOptions) (Identity, error) {
	const op = "write"
	path := d.join(name)
	if err := o.content(op, path, data); err != nil {
		return Identity{}, err
	}
	p, base, err := resolve(op, d, name)
	if err != nil {
		return Identity{}, err
	}
	defer p.close()
	var prev *owner
	if o.prev != nil {
		// The caller's capture under its lock stands for the lstat (see
		// Predecessor).
		if !o.prev.Mode.IsRegular() {
			return Identity{}, typeError(op, path, o.prev.Mode, "a regular file")
		}
		prev = &owner{uid: o.prev.Uid, gid: o.prev.Gid}
	} else if st, err := sys.Lstat(p.fd, base); err == nil {
		// Not a proof (the rename below replaces whatever is at the name
		// by then): the owner and group the successor keeps, and the
		// refusal of a non-regular file that is there now.
		if !st.Mode.IsRegular() {
			return Identity{}, typeError(op, path, st.Mode, "a regular file")
		}
		prev = ownerOf(st)
	} else if o.dirOwner && errors.Is(err, fs.ErrNotExist) && os.Geteuid() == 0 {
		// Nothing to keep the owner of: the directory owner's, for root
		// in another uid's directory (DirOwnerForNewFile).
		if dst, err := sys.Fstat(p.fd); err == nil && dst.Uid != 0 {
			prev = ownerOf(dst)
		}
	}
	s, err := stage(op, path, p.fd, base, ReplacementSuffix, data, o.src, o.perm(perm), prev)
	if err != nil {
		return Identity{}, err
	}
	if err := s.ready(o); err != nil {
		return Identity{}, err
	}
	if err := sys.Rename(p.fd, s.name, p.fd, base); err != nil {
		c, e := settle(op, path, err, s.st, p.fd, s.name, p.fd, base, true)
		if c == NotCommitted {
			return Identity{}, s.failed(e)
		}
		if c == Unknown {
			s.closeFD()
			e.(*Error).Residue = s.residue()
			return Identity{}, e
		}
	}
	if err := s.landed(); err != nil {
		return Identity{}, err
	}
	return s.done(nil, o)
}

// ReplaceExpected is compare-and-swap on a file: it replaces path with data
// only if path is exactly want (every Identity field, ctime included, as
// returned by Capture or a previous write). The successor is staged and
// swapped in with an atomic exchange, so the name is never missing; what
// comes out of the exchange is proved to be the expected predecessor (if a
// successor raced in, it is swapped back and the result is
// identity_mismatch); then the predecessor is removed and the directory
// fsynced. The new file keeps the predecessor's permission bits, owner and
// group (all from the descriptor it was captured through); a caller that
// cannot give it that owner or group is refused as WriteFile explains.
// The exchange is proved like WriteFile's rename: a file renamed over the
// private name before it is never swapped in (identity_mismatch); one
// swapped in after the last check is outcome_unknown, with the
// predecessor kept at the private name named in Residue.
//
// Where the filesystem has no exchange rename, ReplaceExpected fails with
// atomic_unavailable rather than fall back to a rename that could overwrite
// another writer's file. If the replacement committed but the predecessor
// could not be removed, the error is cleanup_pending with its path, and the
// returned Identity (of the new, durable file) is valid.
func ReplaceExpected(path string, data []byte, want Identity, opts ...WriteOption) (Identity, error) {
	return replaceExpected(nil, path, data, want, makeOptions(opts))
}

// ReplaceExpected replaces name beneath d; see ReplaceExpected.
func (d *Dir) ReplaceExpected(name string, data []byte, want Identity, opts ...WriteOption) (Identity, error) {
	return replaceExpected(d, name, data, want, makeOptions(opts))
}

func replaceExpected(d *Dir, name string, data []byte, want Identity, o writeOptions) (Identity, error) {
	const op = "replace"
	path := d.join(name)
	if err := o.content(op, path, data); err != nil {
		return Identity{}, err
	}
	if noExchange {
		return Identity{}, &Error{Op: op, Path: path, Code: CodeAtomicUnavailable,
			Detail: "Windows has no atomic exchange of two names, which ReplaceExpected needs to prove that what it replaced is the expected file; " +
				"nothing was opened or written. Where the last writer may win, WriteFile replaces without that proof"}
	}
	p, base, err := resolve(op, d, name)
	if err != nil {
		return Identity{}, err
	}
	defer p.close()
	if !hook.IsSet(hookNoSerialize) {
		// Take turns with the exact unlinks and replaces of this name in
		// this process; see lockName.
		unlock := lockName(p.fd, base)
		defer unlock()
	}
	_, have, err := captureAt(op, path, p.fd, base, false)
	if err != nil {
		return Identity{}, err
	}
	if have.Nlink == 0 {
		// Unlinked after it was opened: it has no name left.
		return Identity{}, &Error{Op: op, Path: path, Code: CodeNotFound, Detail: "the file was removed while it was checked"}
	}
	if have.Nlink != 1 {
		return Identity{}, &Error{Op: op, Path: path, Code: CodeHardLinkUnsupported,
			Detail: fmt.Sprintf("the file has %d links; its other names would keep the old bytes", have.Nlink)}
	}
	if !have.Equal(want) {
		return Identity{}, &Error{Op: op, Path: path, Code: CodeIdentityMismatch, Detail: "not the expected file: " + want.diff(have)}
	}
	s, err := stage(op, path, p.fd, base, ReplacementSuffix, data, o.src, have.Mode.Perm(), &owner{uid: have.Uid, gid: have.Gid})
	if err != nil {
		return Identity{}, err
	}
	hook.Fire(hook.ReplaceChecked, path)
	if err := s.ready(o); err != nil {
		return Identity{}, err
	}
	if err := sys.Exchange(p.fd, s.name, p.fd, base); err != nil {
		s.discard()
		e := wrap(op, path, err).(*Error)
		if flagsUnavailable(err) {
			e.Code = CodeAtomicUnavailable
			e.Detail = "the filesystem has no atomic exchange rename; refusing to replace without one"
		}
		return Identity{}, e
	}
	// What came out must be the predecessor we judged. If another writer
	// replaced it after our check, swap back: the other writer's file
	// returns to the name exactly, and ours is discarded.
	_, out, cerr := captureAt(op, path, p.fd, s.name, false)
	if cerr != nil || !out.SameContent(want) {
		if err := exchangeBack(p.fd, s.name, base, s.st, s.fd); err != nil {
			return Identity{}, &Error{Op: op, Path: path, Code: CodeRestoreFailed, Err: err,
				Detail: "a concurrent writer's file was displaced and could not be swapped back", Residue: s.residue()}
		}
		s.discard()
		detail := "another writer replaced the file first"
		if cerr == nil {
			detail += ": " + want.diff(out)
		}
		return Identity{}, &Error{Op: op, Path: path, Code: CodeIdentityMismatch, Detail: detail, Err: cerr}
	}
	// What went in must be ours: a file renamed over the staging name
	// after stillStaged was exchanged in instead. The predecessor is then
	// kept at the staging name, named in the error.
	if err := s.landed(s.residue()...); err != nil {
		return Identity{}, err
	}
	// The staging name now holds the proved predecessor under a private
	// name no other process writes to.
	hook.Fire(hook.BeforeCleanup, path)
	var pending error
	if err := sys.Unlink(p.fd, s.name); err != nil {
		pending = &Error{Op: op, Path: path, Code: CodeCleanupPending, Err: err,
			Detail: "replaced, but the predecessor could not be removed", Residue: s.residue()}
	}
	return s.done(pending, o)
}

// noExchange is true where the system has no exchange of two names at all
// (Windows: sys.Exchange is ENOSYS there, whatever the volume), so
// ReplaceExpected refuses before it touches anything, instead of staging
// and flushing a file only to learn that from the exchange. Where the
// exchange depends on the filesystem (Linux, macOS), the exchange itself
// answers.
const noExchange = runtime.GOOS == "windows"

// joinDir names the sibling name of path, for messages and residue lists.
// On Windows, where a path may be written with either separator, it is
// filepath's: the directory of path (cut at the last separator of either
// kind) joined to name with backslashes, "C:/a/f" giving `C:\a\name`, as
// Dir.join names paths there. Elsewhere path keeps its bytes.
func joinDir(path, name string) string {
	if runtime.GOOS == "windows" {
		return filepath.Join(filepath.Dir(path), name)
	}
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[:i+1] + name
	}
	return name
}

// joinShown is rel, a path beneath path with "/" separators (a Tree
// entry's), appended to path for an error message or a residue list: with
// the platform's separator on Windows, so that a user there can paste it.
func joinShown(path, rel string) string {
	if runtime.GOOS == "windows" {
		return path + `\` + strings.ReplaceAll(rel, "/", `\`)
	}
	return path + "/" + rel
}

// PublishStaged moves the regular file at staged, a private name the
// caller created and wrote itself, to name, and never replaces: it is
// Publish for a file that must exist, complete, before it has its name (a
// lock record whose lock the caller takes on the staged descriptor first).
// It renames with RenameNoReplace or, where the filesystem lacks rename
// flags, links name to the staged inode and then removes the staged name,
// only while it still names that inode. The directory is fsynced (both
// directories, if they differ); the caller fsyncs the file's bytes first if
// they must survive a power cut. An existing name is destination_exists
// with nothing changed. The staged name must still hold the file it held
// when the call began right before the rename (else identity_mismatch,
// NotCommitted), and name must hold that file right after it (else
// outcome_unknown with Unknown: a file renamed over the staged name in
// between was published, or a successor came at once).
//
// On NFS, a staged name that is still open when it is removed is renamed
// to .nfsXXXX instead (a second link that lives until the descriptor is
// closed); where that matters, close the file before calling.
func (d *Dir) PublishStaged(staged, name string) (Commit, error) {
	return publishStaged(d, staged, name)
}

// PublishStaged moves staged to name; see (*Dir).PublishStaged.
func PublishStaged(staged, name string) (Commit, error) { return publishStaged(nil, staged, name) }

func publishStaged(d *Dir, staged, name string) (Commit, error) {
	const op = "publish"
	path := d.join(name)
	sp, sbase, err := resolve(op, d, staged)
	if err != nil {
		return NotCommitted, err
	}
	defer sp.close()
	dp, dbase, err := resolve(op, d, name)
	if err != nil {
		return NotCommitted, err
	}
	defer dp.close()
	src, err := sys.Lstat(sp.fd, sbase)
	switch {
	case err != nil:
		return NotCommitted, wrap(op, d.join(staged), err)
	case !src.Mode.IsRegular():
		return NotCommitted, typeError(op, d.join(staged), src.Mode, "a regular file")
	case src.Nlink != 1:
		return NotCommitted, &Error{Op: op, Path: d.join(staged), Code: CodeHardLinkUnsupported,
			Detail: fmt.Sprintf("the staged file has %d links; publishing one of them would leave the others", src.Nlink)}
	}
	if _, err := sys.Lstat(dp.fd, dbase); err == nil {
		return NotCommitted, &Error{Op: op, Path: path, Code: CodeDestinationExists, Err: syscall.EEXIST}
	}
	hook.Fire(hook.Staged, path)
	// As in stillStaged: the rename is by name, so the staged name must
	// still hold the file that was checked, and the destination must hold
	// it after the rename.
	if now, err := sys.Lstat(sp.fd, sbase); err != nil || now.Dev != src.Dev || now.Ino != src.Ino {
		return NotCommitted, &Error{Op: op, Path: path, Code: CodeIdentityMismatch, Err: err,
			Detail: "the staged name " + d.join(staged) + " no longer holds the file that was checked; nothing was committed"}
	}
	hook.Fire(hook.Committing, path)
	linked, err := renameOrLink(sp.fd, sbase, dp.fd, dbase, nil)
	if err != nil {
		c, e := settle(op, path, err, src, sp.fd, sbase, dp.fd, dbase, !linked)
		if c != Committed {
			if errno, ok := err.(syscall.Errno); ok && errno == syscall.EEXIST {
				e.(*Error).Code = CodeDestinationExists
			}
			return c, e
		}
	}
	if dt, err := sys.Lstat(dp.fd, dbase); err != nil || dt.Dev != src.Dev || dt.Ino != src.Ino {
		e := &Error{Op: op, Path: path, Code: CodeOutcomeUnknown,
			Detail: "the commit was made, but the name then did not hold the staged file: either another process replaced the staged name " +
				"just before the commit, which moved its file to the name, or another writer replaced the name just after it; read it to learn what it holds"}
		if linked {
			e.Residue = []string{d.join(staged)}
		}
		return Unknown, e
	}
	var pending error
	if linked {
		// The staged name is now a second link; remove it only while both
		// names hold the inode we published.
		st, serr := sys.Lstat(sp.fd, sbase)
		dt, derr := sys.Lstat(dp.fd, dbase)
		if serr == nil && derr == nil && st.Dev == src.Dev && st.Ino == src.Ino && dt.Dev == src.Dev && dt.Ino == src.Ino {
			serr = sys.Unlink(sp.fd, sbase)
		} else if serr == nil {
			serr = errors.New("the name no longer holds the staged inode")
		}
		if serr != nil && serr != syscall.ENOENT {
			pending = &Error{Op: op, Path: path, Code: CodeCleanupPending, Err: serr,
				Detail: "published by link(2); the staged name could not be removed", Residue: []string{d.join(staged)}}
		}
	}
	if err := syncDir(op, path, dp.fd); err != nil {
		return Committed, err
	}
	// A staged name in another directory: its removal must be durable too.
	sdir, serr := sys.Fstat(sp.fd)
	ddir, derr := sys.Fstat(dp.fd)
	if serr != nil || derr != nil || sdir.Dev != ddir.Dev || sdir.Ino != ddir.Ino {
		if err := syncDir(op, path, sp.fd); err != nil {
			return Committed, err
		}
	}
	return Committed, pending
}
