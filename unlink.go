package exactfs

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/internal/sys"
)

// UnlinkExact removes the regular file at path only if it is exactly want:
// the same inode, size, modification time and SHA-256 of its bytes, with a
// single link (a hard-linked file is refused with hard_link_unsupported,
// because its other name would keep the bytes). It is compare-and-delete:
//
//   - The object is checked, then detached from its name to the private
//     quarantine name (one path component, chosen by the caller, which must
//     not exist: quarantine_collision). Where the filesystem can exchange
//     two names atomically, an empty placeholder takes the canonical name
//     in the same step, so an exclusive-create successor cannot slip in
//     between; elsewhere a no-replace rename detaches it.
//   - The detached object is verified again through a descriptor. If a
//     successor won a race and was detached instead, it is put back exactly
//     where it was and the result is identity_mismatch.
//   - Only then is the detached object deleted, the placeholder removed
//     (only if it is still our empty placeholder: anything else at the name
//     is a successor), and the directory fsynced.
//
// Where the filesystem has neither exchange nor no-replace rename (some NFS
// and CephFS setups), UnlinkExact refuses with atomic_unavailable and
// removes nothing. Residue it cannot prove safe to delete is reported with
// cleanup_pending and its paths, never deleted blindly.
func UnlinkExact(path string, want Identity, quarantine string) error {
	return unlinkExact(nil, path, want, quarantine)
}

// UnlinkExact removes name beneath d; see UnlinkExact.
func (d *Dir) UnlinkExact(name string, want Identity, quarantine string) error {
	return unlinkExact(d, name, want, quarantine)
}

func unlinkExact(d *Dir, name string, want Identity, quarantine string) error {
	const op = "unlink"
	path := d.join(name)
	p, base, err := resolve(op, d, name)
	if err != nil {
		return err
	}
	defer p.close()
	return unlinkAt(op, path, p.fd, base, want, quarantine)
}

func unlinkAt(op, path string, dirfd int, base string, want Identity, quarantine string) error {
	if err := validQuarantine(op, path, quarantine, base); err != nil {
		return err
	}
	if !hook.IsSet(hookNoSerialize) {
		unlock := lockName(dirfd, base)
		defer unlock()
	}
	if err := checkExpected(op, path, dirfd, base, want); err != nil {
		return err
	}
	if _, err := sys.Lstat(dirfd, quarantine); err == nil {
		return &Error{Op: op, Path: path, Code: CodeQuarantineCollision, Detail: "quarantine name " + quarantine + " already exists; nothing was moved"}
	}
	hook.Fire(hook.UnlinkChecked, path)
	u := unlinker{op: op, path: path, dirfd: dirfd, base: base, q: quarantine, want: want}
	if !hook.IsSet(hook.ForceNoExchange) {
		done, err := u.byExchange()
		if done {
			return err
		}
	}
	return u.byNoReplace()
}

// checkExpected proves the object at base is want and has a single link.
func checkExpected(op, path string, dirfd int, base string, want Identity) error {
	_, have, err := captureAt(op, path, dirfd, base, false)
	if err != nil {
		return err
	}
	if !have.SameContent(want) {
		return &Error{Op: op, Path: path, Code: CodeIdentityMismatch, Detail: "not the expected file: " + want.diff(have)}
	}
	if have.Nlink == 0 {
		// Unlinked after it was opened: it has no name left.
		return &Error{Op: op, Path: path, Code: CodeNotFound, Detail: "the file was removed while it was checked"}
	}
	if have.Nlink != 1 {
		return &Error{Op: op, Path: path, Code: CodeHardLinkUnsupported,
			Detail: fmt.Sprintf("the file has %d links; its other names would keep its bytes", have.Nlink)}
	}
	return nil
}

type unlinker struct {
	op, path string
	dirfd    int
	base, q  string
	want     Identity
}

func (u *unlinker) err(c Code, detail string, cause error, residue ...string) error {
	e := &Error{Op: u.op, Path: u.path, Code: c, Detail: detail, Err: cause}
	for _, r := range residue {
		e.Residue = append(e.Residue, joinDir(u.path, r))
	}
	return e
}

// byExchange detaches the target by exchanging it with an empty placeholder
// created at the quarantine name. done is false when the filesystem has no
// exchange and nothing was changed, so the caller may use another way.
func (u *unlinker) byExchange() (done bool, err error) {
	fd, err := sys.Open(u.dirfd, u.q, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		if err == syscall.EEXIST {
			return true, u.err(CodeQuarantineCollision, "quarantine name "+u.q+" already exists; nothing was moved", err)
		}
		return true, wrap(u.op, u.path, err)
	}
	// The descriptor stays open to the end: its link count tells whether
	// the placeholder still exists somewhere when it is not at the name.
	defer sys.Close(fd)
	ph, err := sys.Fstat(fd)
	if err != nil {
		u.dropPlaceholder(u.q, ph)
		return true, wrap(u.op, u.path, err)
	}
	if err := sys.Exchange(u.dirfd, u.q, u.dirfd, u.base); err != nil {
		u.dropPlaceholder(u.q, ph)
		if flagsUnavailable(err) {
			return false, nil
		}
		return true, wrap(u.op, u.path, err)
	}
	hook.Fire(hook.UnlinkDetached, u.path)
	if err := checkExpected(u.op, u.path, u.dirfd, u.q, u.want); err != nil {
		// A successor took the name after our check and was detached in
		// its place: swap it back, then drop our placeholder.
		if e := u.swapBack(fd, ph); e != nil {
			return true, e
		}
		return true, u.err(CodeIdentityMismatch, "a successor replaced the file before it was detached; the successor was put back", err)
	}
	if err := sys.Unlink(u.dirfd, u.q); err != nil {
		return true, u.err(CodeCleanupPending, "the file was detached but could not be deleted", err, u.q)
	}
	hook.Fire(hook.UnlinkDeleted, u.path)
	return true, u.retirePlaceholder(fd, ph)
}

// swapBack returns the object detached by mistake to the name by a second
// exchange, and deletes our placeholder; see exchangeBack.
func (u *unlinker) swapBack(fd int, ph sys.Stat) error {
	if err := exchangeBack(u.dirfd, u.q, u.base, ph, fd); err != nil {
		return u.err(CodeRestoreFailed, "a successor was displaced to the quarantine name and could not be swapped back", err, u.q)
	}
	return u.dropPlaceholder(u.q, ph)
}

var (
	// errNameHeld: exchangeBack waited in vain for the name to hold our
	// object again.
	errNameHeld = errors.New("the name is held by another operation's object")
	// errNameTaken: a successor replaced our object at the name.
	errNameTaken = errors.New("a successor took the name meanwhile")
)

// exchangeBack undoes an exchange of private and name: it exchanges them
// again, but only while name holds ours, the object our exchange put there
// (open as oursFD). If a concurrent exact operation in another process has
// exchanged ours out in turn, that one swaps it back first (the exchanges
// nest); a blind exchange now would hand that process's object to us and
// strand ours. It waits for a bounded time (placeholderWait), and not at
// all once ours has no name left (a successor renamed over it).
func exchangeBack(dirfd int, private, name string, ours sys.Stat, oursFD int) error {
	delay := 50 * time.Microsecond
	deadline := time.Now().Add(placeholderWait)
	for {
		st, err := sys.Lstat(dirfd, name)
		if err == nil && st.Dev == ours.Dev && st.Ino == ours.Ino {
			return sys.Exchange(dirfd, private, dirfd, name)
		}
		if now, err := sys.Fstat(oursFD); err == nil && now.Nlink == 0 {
			return errNameTaken
		}
		if time.Now().After(deadline) {
			return errNameHeld
		}
		time.Sleep(delay)
		delay = min(2*delay, 20*time.Millisecond)
	}
}

// hookNoSerialize, when set, lets exact unlinks of one name in this process
// run at once, as they do across processes (tests of those races).
const hookNoSerialize = "exactfs.unlink.no-serialize"

// nameLocks serialize the exact unlinks and compare-and-swap replaces of
// one name within the process. Concurrent exchanges at one name are correct
// across processes only as far as they nest (see exchangeBack and
// retirePlaceholder); within one process a mutex makes them take turns.
// The lock is striped by a hash of the directory inode and the name, so
// unrelated names rarely wait for each other and never for long.
var nameLocks [64]sync.Mutex

func lockName(dirfd int, base string) (unlock func()) {
	h := fnv.New32a()
	if st, err := sys.Fstat(dirfd); err == nil {
		fmt.Fprintf(h, "%x:%x:", st.Dev, st.Ino)
	}
	h.Write([]byte(base))
	m := &nameLocks[h.Sum32()%uint32(len(nameLocks))]
	m.Lock()
	return m.Unlock
}

// placeholderWait bounds how long retirePlaceholder waits for a placeholder
// that a concurrent exact unlink holds at its quarantine name.
const placeholderWait = 2 * time.Second

// retirePlaceholder takes our empty placeholder (open as fd) off the
// canonical name and deletes it. The name may hold something else:
//
//   - a successor that replaced the placeholder: then the placeholder has
//     no name left (the link count read through fd is 0), and we are done;
//   - for a moment, another exact unlink's placeholder: a concurrent
//     UnlinkExact of the same file, which passed its check before we
//     detached the file, has exchanged our placeholder out to its own
//     quarantine name, will find it is not the file it expected, and will
//     exchange it back. If we returned now, our placeholder would be left
//     at the name for good, so we wait for it, for a bounded time.
func (u *unlinker) retirePlaceholder(fd int, ph sys.Stat) error {
	aside := placeholderName(ph.Dev, ph.Ino)
	delay := 50 * time.Microsecond
	deadline := time.Now().Add(placeholderWait)
	for {
		st, err := sys.Lstat(u.dirfd, u.base)
		if err == nil && st.Dev == ph.Dev && st.Ino == ph.Ino {
			// Move it aside without replacing anything, prove that what
			// moved is still our empty placeholder, and delete it.
			switch rerr := sys.RenameNoReplace(u.dirfd, u.base, u.dirfd, aside); {
			case rerr == nil:
				moved, err := sys.Lstat(u.dirfd, aside)
				switch {
				case err != nil:
					return u.err(CodeCleanupPending, "could not inspect the placeholder after moving it aside", err, aside)
				case moved.Dev == ph.Dev && moved.Ino == ph.Ino && moved.Size == 0 && moved.Mode.IsRegular():
					if err := sys.Unlink(u.dirfd, aside); err != nil {
						return u.err(CodeCleanupPending, "could not delete the placeholder", err, aside)
					}
					return u.sync()
				}
				// What moved is not our empty placeholder: a successor took
				// the name between the lstat and the rename, or wrote into
				// the placeholder. It goes back to its name.
				if err := sys.RenameNoReplace(u.dirfd, aside, u.dirfd, u.base); err != nil {
					return u.err(CodeRestoreFailed, "a successor was moved aside with the placeholder and could not be put back", err, aside)
				}
				if moved.Dev == ph.Dev && moved.Ino == ph.Ino {
					return u.sync() // our placeholder, now holding a successor's bytes
				}
			case rerr == syscall.ENOENT:
				// Moved away between the lstat and the rename: look again.
			default:
				return u.err(CodeCleanupPending, "the file was deleted but its empty placeholder is still at the name", rerr, u.base)
			}
		} else if gone, ferr := u.nameless(fd); ferr != nil || gone {
			if ferr != nil {
				return u.err(CodeCleanupPending, "the file was deleted; could not tell where its placeholder is", ferr, u.base)
			}
			return u.sync()
		}
		if time.Now().After(deadline) {
			return u.err(CodeCleanupPending, fmt.Sprintf("the file was deleted, but a concurrent operation holds its empty placeholder (inode %d) elsewhere; it may come back to the name", ph.Ino), nil, u.base)
		}
		time.Sleep(delay)
		delay = min(2*delay, 20*time.Millisecond)
	}
}

// nameless reports whether the file open as fd has no name left.
func (u *unlinker) nameless(fd int) (bool, error) {
	st, err := sys.Fstat(fd)
	if err != nil {
		return false, err
	}
	return st.Nlink == 0, nil
}

// dropPlaceholder deletes the placeholder at name if it is still the empty
// file we created. Anything else found there is a successor that a rename
// put in its place; it is moved back to the canonical name if that is free.
func (u *unlinker) dropPlaceholder(name string, ph sys.Stat) error {
	st, err := sys.Lstat(u.dirfd, name)
	if err != nil {
		if err == syscall.ENOENT {
			return nil
		}
		return u.err(CodeCleanupPending, "could not inspect the placeholder", err, name)
	}
	if st.Dev == ph.Dev && st.Ino == ph.Ino && st.Size == 0 && st.Mode.IsRegular() {
		if err := sys.Unlink(u.dirfd, name); err != nil {
			return u.err(CodeCleanupPending, "could not delete the placeholder", err, name)
		}
		return nil
	}
	if name != u.base && name != u.q {
		if err := sys.RenameNoReplace(u.dirfd, name, u.dirfd, u.base); err == nil {
			return nil
		}
		return u.err(CodeRestoreFailed, "a successor was moved aside with the placeholder and could not be put back", nil, name)
	}
	return u.err(CodeCleanupPending, "the placeholder name holds an object that is not ours; left alone", nil, name)
}

// byNoReplace detaches with a no-replace rename, verifies, and puts a
// mismatching object back with a no-replace rename.
func (u *unlinker) byNoReplace() error {
	if err := sys.RenameNoReplace(u.dirfd, u.base, u.dirfd, u.q); err != nil {
		switch {
		case flagsUnavailable(err):
			return u.err(CodeAtomicUnavailable, "the filesystem has neither an exchange nor a no-replace rename, so the file cannot be removed without risking a successor; nothing was removed. Only a person can clear it here (exactfs recover cannot either): make sure its owner is gone, then remove it by hand", err)
		case err == syscall.EEXIST:
			return u.err(CodeQuarantineCollision, "quarantine name "+u.q+" already exists; nothing was moved", err)
		}
		return wrap(u.op, u.path, err)
	}
	hook.Fire(hook.UnlinkDetached, u.path)
	if err := checkExpected(u.op, u.path, u.dirfd, u.q, u.want); err != nil {
		if rerr := sys.RenameNoReplace(u.dirfd, u.q, u.dirfd, u.base); rerr != nil {
			return u.err(CodeRestoreFailed, "a successor was detached by mistake and its name was taken again; it is at the quarantine name", rerr, u.q)
		}
		return u.err(CodeIdentityMismatch, "a successor replaced the file before it was detached; the successor was put back", err)
	}
	if err := sys.Unlink(u.dirfd, u.q); err != nil {
		return u.err(CodeCleanupPending, "the file was detached but could not be deleted", err, u.q)
	}
	return u.sync()
}

func (u *unlinker) sync() error { return syncDir(u.op, u.path, u.dirfd) }
