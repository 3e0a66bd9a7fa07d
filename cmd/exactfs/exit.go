package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/liveness"
	"github.com/exactfs/exactfs/statelock"
)

// Exit statuses. 64, 74, 75, 76 and 77 follow sysexits.h where it has a
// meaning that fits (EX_USAGE, EX_IOERR, EX_TEMPFAIL); 76 and 77 are ours
// because a script must be able to tell "someone else's file is there" from
// "something unsafe is there".
const (
	exitOK       = 0
	exitUsage    = 64 // bad flags or arguments
	exitDataErr  = 65 // update: CMD printed nothing, write: empty stdin (EX_DATAERR); the file is untouched
	exitUnavail  = 69 // a backend URL whose command (exactfs-etcd) is not installed (EX_UNAVAILABLE)
	exitIO       = 74 // any other failure: I/O, permissions, nothing there
	exitBusy     = 75 // the lock is held (or the wait timed out); try again later
	exitMismatch = 76 // identity mismatch, or the destination exists: nothing was changed
	exitUnsafe   = 77 // a symlink, FIFO, socket, device or hard link was refused: nothing was touched
	// Shell conventions for a CMD that could not be run.
	exitCannotExec = 126
	exitNotFound   = 127
)

const exitCodeHelp = `Exit status:
  0    success
  N    lock, update: the status of CMD itself (128+n if CMD was killed by signal n;
       126 if CMD could not be executed, 127 if it was not found)
  64   usage error
  65   update: CMD exited 0 but printed nothing; write: stdin was empty; the
       file was left untouched (--allow-empty accepts an empty result)
  69   an etcd:// or etcds:// STATEFILE, whose command exactfs-etcd is not installed
  71   etcd:// or etcds:// update: the commit got no answer and MAY have applied
  74   other failure (I/O error, permission denied, nothing at the path, a
       missing --config-root); status: the lock record is unreadable or
       this user may not open it (status --exit-status has codes of its own)
  75   lock busy or timed out (--conflict-exit-code N overrides, as flock -E does);
       also: the file changed while it was being read; recover: a planned
       action was not done because its object was in use
  76   identity mismatch or destination exists: the object is not the one
       expected, and nothing was changed
  77   unsafe path refused: a symlink, FIFO, socket, device, directory or
       hard-linked file where a regular file belongs (or a file where a
       directory belongs); nothing was read through it or changed; also a
       lock file exactfs may not trust (another user's, hard-linked, or not
       0600) that it cannot replace (lock_object_untrusted)
`

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitStatus is the status of a child command, passed through unchanged.
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// conflictError carries a busy failure whose exit status the user chose
// with --conflict-exit-code.
type conflictError struct {
	err    error
	status int
}

func (c conflictError) Error() string { return c.err.Error() }
func (c conflictError) Unwrap() error { return c.err }

// withConflictStatus makes a busy error exit with status instead of 75.
func withConflictStatus(err error, status int) error {
	if err == nil || status == exitBusy || exitCode(err) != exitBusy {
		return err
	}
	return conflictError{err: err, status: status}
}

// exitCode maps an error to its documented exit status, by the outcome
// code of an exactfs failure (outcome).
func exitCode(err error) int {
	var ue usageError
	var st exitStatus
	code := outcome(err)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &st):
		return int(st)
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, new(emptyOutput)), errors.As(err, new(emptyInput)):
		return exitDataErr
	case errors.As(err, new(notDoneError)):
		return exitBusy
	case code == statelock.ReasonUnsafePathType, code == statelock.ReasonUntrusted, isUnsafe(code), errors.Is(err, syscall.ELOOP):
		return exitUnsafe
	case errors.Is(err, statelock.ErrLocked),
		errors.Is(err, context.DeadlineExceeded),
		code == exactfs.CodeChangedDuringRead:
		return exitBusy
	case code == exactfs.CodeIdentityMismatch,
		code == exactfs.CodeDestinationExists,
		code == exactfs.CodeParentMismatch:
		return exitMismatch
	}
	return exitIO
}

// outcome returns the code that classifies err: the outermost exactfs code,
// which is the outcome for exactfs and the packages on it, except for a
// lock failure that only names the step that failed
// (lock_initialization_failed, lock_inspection_failed, lock_release_failed):
// that is classified by the coded error that made the step fail, so that a
// symlink in the way of creating the lock is refused like any other
// symlink. "" when err carries no code.
func outcome(err error) exactfs.Code {
	var e *exactfs.Error
	for errors.As(err, &e) {
		switch e.Code {
		case statelock.ReasonInitFailed, statelock.ReasonInspectionFailed, statelock.ReasonReleaseFailed:
			if exactfs.CodeOf(e.Err) != "" {
				err = e.Err
				continue
			}
		}
		return e.Code
	}
	return exactfs.CodeOf(err)
}

// lockReasons are the codes of statelock's failures.
var lockReasons = map[exactfs.Code]bool{
	statelock.ReasonAcquireTimeout: true, statelock.ReasonTransitionClaimTimeout: true,
	statelock.ReasonOwnerLive: true, statelock.ReasonOwnerRecordFresh: true,
	statelock.ReasonOwnerUnprovenanced: true, statelock.ReasonLegacyUnprovenanced: true,
	statelock.ReasonUnsafePathType: true, statelock.ReasonInitFailed: true,
	statelock.ReasonInspectionFailed: true, statelock.ReasonReleaseFailed: true,
	statelock.ReasonUntrusted: true,
}

// lockFailed returns the state lock's failure in err, if its outcome is
// one (its code is a lock reason), or nil.
func lockFailed(err error) *statelock.LockError {
	var e *statelock.LockError
	if errors.As(err, &e) && lockReasons[e.Code] {
		return e
	}
	return nil
}

// lockHolder is who holds the lock, as the lock failure le's *WaitError
// cause describes it, or "" (no failure, no cause, no holder named).
func lockHolder(le *statelock.LockError) string {
	var w *statelock.WaitError
	if le == nil || !errors.As(le.Err, &w) {
		return ""
	}
	return w.Holder
}

// isUnsafe reports a refusal because of what occupies a path: the codes
// exactfs uses for a symlink, a non-regular file, a directory where a file
// belongs, and a hard-linked file whose other name would keep its bytes.
func isUnsafe(code exactfs.Code) bool {
	switch code {
	case exactfs.CodeReparsePoint, exactfs.CodeNotRegularFile, exactfs.CodeNotDirectory,
		exactfs.CodeUnsupportedEntry, exactfs.CodeHardLinkUnsupported:
		return true
	}
	return false
}

// othersClaim says, for the lock at lockPath, that its transition claim is
// a directory of another uid, which waiting does not end for this user when
// that uid may not be able to remove it (a shared sticky directory lets
// anyone plant one); or "".
func othersClaim(lockPath string) string {
	claim := strings.TrimSuffix(lockPath, ".lock") + ".lock.transition"
	uid, mode, ok := fileOwner(claim)
	if !ok || int(uid) == os.Geteuid() || os.Geteuid() == 0 {
		return ""
	}
	return fmt.Sprintf("the transition claim %s is a directory of %s (mode %04o), not one of this user's lock calls; "+
		"if no process of %s uses this lock, %s or root can remove it (rmdir %s); 'exactfs status' says more",
		claim, uidName(uid), mode, uidName(uid), uidName(uid), shellJoin([]string{claim}))
}

// inSharedSticky reports whether the object at path sits in a shared sticky
// directory (sticky, writable by group or others: /tmp) that its owner does
// not own: there anyone may have planted it, and the advice for a lock
// shared between uids does not fit.
func inSharedSticky(path string) bool {
	if path == "" {
		return false
	}
	uid, _, ok := fileOwner(path)
	if !ok {
		return false
	}
	d, err := exactfs.OpenDir(filepath.Dir(path))
	if err != nil {
		return false
	}
	defer d.Close()
	st, err := d.StatRaw()
	return err == nil && st.Mode&fs.ModeSticky != 0 && st.Mode.Perm()&0o022 != 0 && st.Uid != uid
}

// othersPlanted says that the unsafe object at path (a symlink, FIFO,
// socket or device where a lock file belongs) is another uid's, which this
// user cannot remove from a shared sticky directory such as /tmp; or "".
// "remove what is there yourself" was no advice there.
func othersPlanted(path string) string {
	uid, _, ok := fileOwner(path)
	if path == "" || !ok || int(uid) == os.Geteuid() || os.Geteuid() == 0 {
		return ""
	}
	return fmt.Sprintf("nothing was touched; %s belongs to %s, not to this user (%s): in a shared sticky directory (/tmp) only %s or root can remove it. "+
		"Ask them, or keep the state file in a directory that only this user can write",
		path, uidName(uid), uidName(uint32(os.Geteuid())), uidName(uid))
}

// hintFor says what to do about err, in one line, or "".
func hintFor(err error, code int) string {
	le := lockFailed(err)
	isLock := le != nil
	holder := lockHolder(le)
	oc := outcome(err)
	switch {
	case isLock && (code == exitUnsafe || code == exitIO) && (errors.Is(err, fs.ErrPermission) || strings.Contains(err.Error(), "permission denied")) && othersRecord(innermostPath(err)) != "":
		if p := innermostPath(err); inSharedSticky(p) {
			return othersPlanted(p)
		}
		return othersRecord(innermostPath(err)) + ": " + sharedUIDAdvice
	case code == exitBusy && isLock && strings.Contains(holder, "only explicit recovery"):
		return "waiting does not help: a crash left this transition claim, and no lock call removes it; " +
			"run 'exactfs recover " + stateFileOf(le.Path) + "' (it checks that the claim is empty and unowned, then removes it)"
	case code == exitBusy && isLock && strings.Contains(holder, "empty legacy lock directory"):
		return "an empty legacy lock directory has no owner: a lock call takes it over once it is 30s old; " +
			"if you know nothing uses it, remove it now (rmdir " + le.Path + ")"
	case code == exitBusy && isLock && (strings.Contains(holder, " on host ") || strings.Contains(holder, " on an unnamed host")):
		if x, ok := readRecordExtras(le.Path); ok && thisBoot(x.BootID) {
			return "the record carries this machine's current boot id: it was probably written on this host under another config root " +
				"(a --config-root, or a kept demo directory's config/); 'exactfs status " + stateFileOf(le.Path) + "' looks for that root, or pass it with --config-root DIR"
		}
		return "a record that does not name this host is never judged by its pid, so it is respected until released; " +
			"'exactfs status' says whether this host wrote it under another config root, and gives the safe way out"
	case code == exitBusy && isLock && othersClaim(le.Path) != "":
		return othersClaim(le.Path)
	case code == exitBusy && isLock:
		hint := "the lock is held by a live (or unverifiable) owner; retry later, use --timeout to wait longer, or run 'exactfs status' to see who holds it"
		if x, ok := readRecordExtras(le.Path); ok && otherPidNS(x.PidNS) {
			hint = fmt.Sprintf("its pid is in another pid namespace (ns %d: a container, unshare --pid), not one ps shows here; ", x.PidNS) + hint
		}
		return hint
	case code == exitBusy:
		return "the file changed while it was read; retry"
	case code == exitUnsafe && oc == exactfs.CodeReparsePoint && symlinkHintFor(err) != "":
		return symlinkHintFor(err)
	case code == exitUnsafe && isLock && othersPlanted(innermostPath(err)) != "":
		return othersPlanted(innermostPath(err))
	case code == exitUnsafe && isLock:
		return "nothing was touched; inspect the path with 'ls -l' and remove what is there yourself if it is not yours"
	case code == exitUnsafe && oc == exactfs.CodeHardLinkUnsupported:
		return hardLinkHint(err)
	case code == exitUnsafe:
		return "nothing was followed or changed; exactfs only operates on regular files and directories it can prove"
	case code == exitMismatch && oc == exactfs.CodeDestinationExists:
		return "nothing was replaced; use 'exactfs write --expect ID' to replace a file you have seen"
	case code == exitMismatch:
		return "nothing was changed; run 'exactfs stat' again to see what is there now"
	case errors.As(err, new(permissionRecordError)):
		return sharedUIDAdvice + "; 'exactfs recover' does not remove a record for this"
	case errors.As(err, new(unreadableError)):
		return "'exactfs recover' removes such a record once it is 30s old and no process holds it, and prints the exact removal of a younger one"
	case errors.As(err, new(notDoneError)):
		return "run 'exactfs recover' again later; 'exactfs status' shows what is there now"
	case errors.As(err, new(emptyInput)):
		return "if the producer failed, fix it (set -o pipefail makes a failed curl stop the pipeline); pass --allow-empty if an empty file is what you want"
	case errors.As(err, new(emptyOutput)):
		return "if the command edits the file itself (jq -i, sed -i), make it print the result instead; pass --allow-empty if an empty file is what you want"
	case errors.Is(err, liveness.ErrConfigRootUnavailable) && runtime.GOOS == "windows":
		return `exactfs keeps this host's identity in a config root (%XDG_CONFIG_HOME%\exactfs when that is set, else %APPDATA%\exactfs), ` +
			"owner-only by its DACL: set APPDATA to a directory this user can write, or pass --config-root DIR (an existing owner-only directory; every process sharing the lock must use the same one). " +
			"Under Wine, which keeps no DACL, no config root can be owner-only"
	case errors.Is(err, liveness.ErrConfigRootUnavailable):
		return "exactfs keeps this host's identity in a config root ($XDG_CONFIG_HOME/exactfs, else ~/.config/exactfs): " +
			"set HOME to a directory this user can write, or pass --config-root DIR (an existing owner-only directory; every process sharing the lock must use the same one)"
	case errors.As(err, new(missingConfigRootError)):
		return "check it for a typo: every process sharing a lock must use one config root. If a new one is what you mean, create it first (mkdir -m 700 DIR)"
	case errors.As(err, new(missingDirError)):
		return "check the path for a typo; create the directory first (mkdir -p), or pass --mkdir to have it created (mode 0700)"
	case !isLock && (oc == exactfs.CodePermissionDenied || errors.Is(err, fs.ErrPermission)):
		if o := othersRecord(innermostPath(err)); o != "" {
			return o + "; run as that user (or root), or have them give this user access"
		}
		return "this user may not do that there; check the permissions of the file and its directory (ls -ld) and who the command runs as (id)"
	case oc == exactfs.CodeAtomicUnavailable:
		return "this filesystem cannot rename without replacing (NFS, some FUSE); run 'exactfs doctor' for details"
	case oc == exactfs.CodeNotFound || (oc == "" && errors.Is(err, fs.ErrNotExist)):
		return "nothing is at that path"
	case oc == exactfs.CodeCleanupPending:
		return "the operation is done; the residue listed above is named so that 'exactfs recover' or a reaper can prove and remove it"
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "the filesystem is full (no space, no inodes, or over quota); free some and run the command again"
	case errors.Is(err, syscall.EROFS):
		return "the filesystem is read-only; run the command again once it is writable (after an error, the kernel keeps it read-only until it is unmounted, checked and mounted again)"
	case errors.Is(err, syscall.EIO):
		return "the device reported an I/O error (see dmesg); once it works again, 'exactfs status' shows what the lock was left as"
	}
	return ""
}

// symlinkHintFor explains a refusal because of a symlink among the
// directories of the path err names, or returns "".
func symlinkHintFor(err error) string {
	var xe *exactfs.Error
	if !errors.As(err, &xe) || xe.Path == "" {
		return ""
	}
	return symlinkHint(xe.Path)
}

// hardLinkHint says how to go on with a file exactfs refused because it has
// more than one name: find the other names, then either remove them or,
// for a write, give this name a file of its own, knowingly.
func hardLinkHint(err error) string {
	p := "FILE"
	var xe *exactfs.Error
	if errors.As(err, &xe) && xe.Path != "" {
		p = xe.Path
	}
	find := fmt.Sprintf("list its names with 'find MOUNTPOINT -xdev -samefile %s'", p)
	if xe != nil && xe.Op == "unlink" {
		return find + "; exactfs rm removes only a file with one name: remove the other names first, or, to drop just this name and keep the file under the others, use plain rm"
	}
	return fmt.Sprintf("%s; remove the names you do not need, or, to give this name a copy of its own and leave the others as they are, "+
		"'cp -p %s %s.copy && mv %s.copy %s'; then run the command again", find, p, p, p, p)
}

// sharedUIDAdvice is what to do when a lock file belongs to another user:
// the protocol makes every lock record owner-only, so a lock is shared by
// processes of one uid (and root), never through group permissions.
const sharedUIDAdvice = "every process sharing a lock must run as the same user, because its records are owner-only (0600) by the protocol, " +
	"so a group-writable directory does not share a lock between users; run this as that user (or root), or give the processes one uid"
