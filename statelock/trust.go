package statelock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strconv"

	"github.com/exactfs/exactfs"
)

// The trust rule (SPEC §4.2, Trust). Exclusion rests on the inodes the lock
// writes into and the directories it takes; whoever owns such an inode can
// rename it over the lock's name again at any moment (a sticky directory
// lets an owner do exactly that), so a lock held in someone else's inode
// is held at that someone's pleasure. So an object that is:
//   - owned by a uid we do not trust,
//   - a file with more than one link (another name keeps it, and can be
//     renamed back over ours), or
//   - of a mode other than the protocol's (0600 for records and sidecars,
//     0700 for the claim directory and its spare)
//
// is never written into, rewritten in place or reused. A record or sidecar
// of that kind is replaced under the claim: exact unlink of the version
// judged, then our own create; where the directory does not allow the
// unlink (a sticky directory, a directory we may not write), the lock is
// refused with lock_object_untrusted, naming the owner and who can clear
// it. A spare claim directory of that kind is passed over (the claim is
// made with mkdir). Records whose owner is alive are judged as always: a
// live holder of another uid is contention, whoever owns its file.
//
// The trusted owners are our effective uid and the owner of the directory
// the lock lives in. The directory's owner can rename or unlink anything in
// its own directory anyway (the sticky bit does not bind it), so trusting
// its files adds nothing it could not already do; and it is what lets root
// and a service share the service's directory (see chownForDir).

// ReasonUntrusted: an object the lock needs is owned by another uid, has
// extra links or the wrong mode, and cannot be replaced here.
const ReasonUntrusted Reason = "lock_object_untrusted"

// untrustedError carries the refusal (an *exactfs.Error with code
// ReasonUntrusted) through the lock's steps to the acquisition.
type untrustedError struct{ err *exactfs.Error }

func (e *untrustedError) Error() string { return e.err.Error() }
func (e *untrustedError) Unwrap() error { return e.err }

// distrustFile is distrust for the file open as f ("" when it cannot be
// asked: the next step's own checks decide then).
func (l *locker) distrustFile(f *os.File) (string, exactfs.RawStat) {
	st, err := exactfs.StatFileRaw(f)
	if err != nil {
		return "", st
	}
	return l.distrust(st, false), st
}

// foreignFile is foreignOwner for the file open as f: why it is another
// user's (neither ours nor the directory owner's), or "". The residue
// sweeps never remove such a file, whatever its name says.
func (l *locker) foreignFile(f *os.File) string {
	if l.euid < 0 {
		return "" // no uids here
	}
	st, err := exactfs.StatFileRaw(f)
	if err != nil {
		return "its owner cannot be read (" + err.Error() + ")"
	}
	return l.foreignOwner(st.Uid)
}

// userName is "uid N (name)", or "uid N" where the name is unknown.
func userName(uid uint32) string {
	s := "uid " + strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil && u.Username != "" {
		s += " (" + u.Username + ")"
	}
	return s
}

// refuseUntrusted is the refusal of name, an object we may not adopt (why)
// and could not replace (cause: the unlink's or open's error, nil when
// nothing was tried). It names the owner and says who can clear it.
func (l *locker) refuseUntrusted(name string, st exactfs.RawStat, why string, cause error) error {
	owner := userName(st.Uid)
	detail := why + "; a lock file we cannot trust is never written into or reused " +
		"(its owner could rename it away while we hold the lock)"
	if cause != nil {
		detail += ", and this one cannot be replaced here (" + errText(cause) + ")"
	}
	who := owner + " or root"
	if st.Uid == 0 {
		who = "root"
	}
	detail += ". " + who + " can remove it (after checking that no process of theirs holds the lock); " +
		"the next lock then creates its own"
	return &untrustedError{&exactfs.Error{Op: "lock", Path: l.path(name), Code: ReasonUntrusted, Detail: detail, Err: cause}}
}

// refuseIfForeign turns a permission error met at name (opening, reading
// or removing it) into the refusal naming its owner, when the object there
// is not ours: one we do not trust, or the directory owner's that we may
// not read or write. Any other error comes back unchanged.
func (l *locker) refuseIfForeign(name string, err error) error {
	var done *untrustedError
	if !permissionError(err) || errors.As(err, &done) {
		return err
	}
	st, serr := l.dir.LstatRaw(name)
	if serr != nil {
		return err
	}
	why := l.distrust(st, st.Mode.IsDir())
	if why == "" {
		euid := l.euid
		if euid < 0 || st.Uid == uint32(euid) {
			return err
		}
		why = fmt.Sprintf("it is owned by %s with mode %04o, which we (%s) may not use", userName(st.Uid),
			st.PermBits(), userName(uint32(euid)))
	}
	return l.refuseUntrusted(name, st, why, err)
}

func permissionError(err error) bool {
	return err != nil && (errors.Is(err, fs.ErrPermission) || exactfs.CodeOf(err) == exactfs.CodePermissionDenied)
}

// errText is the innermost error's text: the errno, not the wrapping.
func errText(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}
