package exactfs

import (
	"io"
	"io/fs"
)

// A WriteOption adjusts Publish, WriteFile and ReplaceExpected.
type WriteOption func(*writeOptions)

type writeOptions struct {
	beforeCommit func() error
	afterCommit  func()
	exactPerm    bool
	// prev is the caller's capture of the file WriteFile replaces (see
	// Predecessor); nil: WriteFile lstats the name.
	prev *Identity
	// dirOwner: a new file is the directory owner's (DirOwnerForNewFile).
	dirOwner bool
	// src, if not nil, is where the new bytes come from (ContentFrom).
	src io.Reader
}

// DirOwnerForNewFile makes WriteFile give a file that did not exist at the
// name (nothing there to keep the owner of) to the owner and group of its
// directory, when the caller is root and the directory is another uid's.
// It is the rule the state lock applies to the records it makes beside the
// file (statelock's chownForDir) carried to the state file itself: root's
// one-off Update of a state file a service has not written yet, in the
// service's directory, otherwise left a root-owned 0600 file there that the
// service could neither read nor update, while the lock beside it was the
// service's. Giving it to the directory's owner gives it to no one new:
// that owner can already remove or replace any file there, and in a shared
// sticky directory (/tmp) owned by root nothing changes. A file that exists
// keeps its own owner as WriteFile says; a caller that is not root is
// unaffected (a new file is its own, as with os.WriteFile).
func DirOwnerForNewFile() WriteOption {
	return func(o *writeOptions) { o.dirOwner = true }
}

// ExactPerm makes Publish and WriteFile give the new file exactly perm,
// without the umask: for a caller that keeps the mode of the file it
// replaces, or that was told a mode explicitly (chmod-like, as install -m
// is). Without it, perm is narrowed by the process's umask, as os.WriteFile
// and open(2) narrow it, so 0o666 gives 0644 under the usual 022.
func ExactPerm() WriteOption {
	return func(o *writeOptions) { o.exactPerm = true }
}

// Predecessor tells WriteFile that the caller has just captured the file
// it replaces, with the identity id (from Capture, through the descriptor
// its bytes were read by), and that the writers of the file take turns
// under a lock the caller holds. WriteFile then takes the successor's
// owner and group (and refuses a non-regular file) from id instead of
// lstatting the name again: one system call fewer per write for a
// read-modify-write under a lock (statelock's Update), where nothing that
// honours the lock can have replaced the file between the capture and the
// write. The owner rule WriteFile describes is unchanged; it rests on the
// caller's capture instead of a later lstat, which an outside writer
// could race just as well. A zero id (no file was there) is ignored: the
// name is then looked at as without the option, so that a file that
// appeared meanwhile keeps its owner. Publish and ReplaceExpected ignore
// it (Publish replaces nothing; ReplaceExpected captures the file itself).
func Predecessor(id Identity) WriteOption {
	return func(o *writeOptions) {
		if id != (Identity{}) {
			o.prev = &id
		}
	}
}

// perm is the mode a new file gets for the perm its caller passed: perm
// itself with ExactPerm, else perm without the umask's bits.
func (o writeOptions) perm(perm fs.FileMode) fs.FileMode {
	if o.exactPerm {
		return perm
	}
	return perm &^ umask()
}

// BeforeCommit makes f run once the new bytes are staged and fsynced under
// their private name, right before they are renamed, linked or exchanged
// into place: the last moment at which the write can still be called off.
// A fence belongs here (is the lease still ours?). If f returns an error,
// nothing is committed: the staged file is removed, the destination is
// untouched, and the result is an *Error that wraps f's error (errors.Is
// finds it) with f's exactfs code if it has one, else interrupted.
//
// f narrows the window between its check and the commit to a few system
// calls; it cannot close it. A fence that must hold at the commit itself
// needs the filesystem to enforce it (a lock the other writers honour).
func BeforeCommit(f func() error) WriteOption {
	return func(o *writeOptions) { o.beforeCommit = f }
}

// AfterCommit makes f run once the new file is at its name (renamed,
// linked or exchanged in) and before the directory is fsynced: from then on
// every process sees the change, and it survives a power cut only once that
// fsync is done. The write still makes that fsync after f returns and
// reports its result as before. A lock whose holder may let the next
// holder in as soon as the change is visible releases here (statelock's
// Update); whoever then depends on durability must wait for the write to
// return.
func AfterCommit(f func()) WriteOption {
	return func(o *writeOptions) { o.afterCommit = f }
}

// ContentFrom makes Publish, WriteFile or ReplaceExpected take the new
// file's bytes from r, read to its end and written to the staging file as
// they come, instead of from data, which must then be nil (else the call
// is invalid_request and nothing is opened). Memory stays bounded whatever
// the size: a producer that writes gigabytes fills the disk, not the
// process, and a full disk fails the call with nothing changed. Every
// proof is the same as with data: the bytes are complete and fsynced
// before a name points at them, and the returned Identity carries their
// SHA-256, computed as they are written. If reading r fails, the call
// fails with io_error, the staged bytes are removed, and the file at the
// name is untouched. The call returns only after r's end, so r must end
// (a pipe whose writer closes it, a file); a terminal ends at its end-of-
// file key.
func ContentFrom(r io.Reader) WriteOption {
	return func(o *writeOptions) { o.src = r }
}

// content refuses data given twice, before anything is opened.
func (o writeOptions) content(op, path string, data []byte) error {
	if o.src != nil && data != nil {
		return &Error{Op: op, Path: path, Code: CodeInvalidRequest,
			Detail: "the new bytes were given twice, as data and through ContentFrom; pass nil data with ContentFrom"}
	}
	return nil
}

func makeOptions(opts []WriteOption) writeOptions {
	var o writeOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// commit runs the BeforeCommit callback, discarding s if it refuses.
func (o writeOptions) commit(s *pendingFile) error {
	if o.beforeCommit == nil {
		return nil
	}
	if err := o.beforeCommit(); err != nil {
		s.discard()
		code := CodeOf(err)
		if code == "" {
			code = CodeInterrupted
		}
		return &Error{Op: s.op, Path: s.path, Code: code, Err: err,
			Detail: "called off before the commit by the caller's check; nothing was changed"}
	}
	return nil
}
