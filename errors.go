package exactfs

import (
	"errors"
	"io/fs"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"github.com/exactfs/exactfs/internal/sys"
)

// Code names an outcome. The names are shared with the TypeScript peers, so
// operators see one vocabulary in both implementations' logs.
type Code string

// The outcome codes, the names the TypeScript peers log too, plus the three
// exactfs adds.
const (
	CodeNotFound            Code = "not_found"
	CodeIdentityMismatch    Code = "identity_mismatch"
	CodeHardLinkUnsupported Code = "hard_link_unsupported"
	CodeReparsePoint        Code = "reparse_point"
	CodeNotRegularFile      Code = "not_regular_file"
	CodeNotDirectory        Code = "not_directory"
	CodeUnsupportedEntry    Code = "unsupported_entry"
	CodeNotUTF8             Code = "not_utf8"
	CodeParentMismatch      Code = "parent_mismatch"
	CodeQuarantineCollision Code = "quarantine_collision"
	CodeDestinationExists   Code = "destination_exists"
	CodeRestoreFailed       Code = "restore_failed"
	CodeCleanupPending      Code = "cleanup_pending"
	CodeCleanupFailed       Code = "cleanup_failed"
	CodeDurabilityFailed    Code = "durability_failed"
	CodeAtomicUnavailable   Code = "atomic_unavailable"
	CodeInvalidRequest      Code = "invalid_request"
	CodeCrossDevice         Code = "cross_device"
	CodePermissionDenied    Code = "permission_denied"
	CodeInterrupted         Code = "interrupted"
	CodeIOError             Code = "io_error"

	// CodeChangedDuringRead: a capture saw the file change while it read it,
	// so nothing it read can be attributed to one version of the file.
	CodeChangedDuringRead Code = "changed_during_read"
	// CodeUnsupported: the platform cannot do the operation safely.
	CodeUnsupported Code = "unsupported"
	// CodeOutcomeUnknown: a write reached its rename (or exchange), and
	// what the name holds afterwards is not the file the write staged, so
	// neither "committed" nor "nothing changed" can be proved. Read the
	// name again to learn what it holds.
	CodeOutcomeUnknown Code = "outcome_unknown"
)

// Sentinels for errors.Is. An *Error matches the sentinel of its Code.
var (
	ErrNotFound            = sentinel(CodeNotFound)
	ErrIdentityMismatch    = sentinel(CodeIdentityMismatch)
	ErrHardLinkUnsupported = sentinel(CodeHardLinkUnsupported)
	ErrReparsePoint        = sentinel(CodeReparsePoint)
	ErrNotRegularFile      = sentinel(CodeNotRegularFile)
	ErrNotDirectory        = sentinel(CodeNotDirectory)
	ErrUnsupportedEntry    = sentinel(CodeUnsupportedEntry)
	ErrNotUTF8             = sentinel(CodeNotUTF8)
	ErrParentMismatch      = sentinel(CodeParentMismatch)
	ErrQuarantineCollision = sentinel(CodeQuarantineCollision)
	ErrDestinationExists   = sentinel(CodeDestinationExists)
	ErrRestoreFailed       = sentinel(CodeRestoreFailed)
	ErrCleanupPending      = sentinel(CodeCleanupPending)
	ErrCleanupFailed       = sentinel(CodeCleanupFailed)
	ErrDurabilityFailed    = sentinel(CodeDurabilityFailed)
	ErrAtomicUnavailable   = sentinel(CodeAtomicUnavailable)
	ErrInvalidRequest      = sentinel(CodeInvalidRequest)
	ErrCrossDevice         = sentinel(CodeCrossDevice)
	ErrPermissionDenied    = sentinel(CodePermissionDenied)
	ErrInterrupted         = sentinel(CodeInterrupted)
	ErrIO                  = sentinel(CodeIOError)
	ErrChangedDuringRead   = sentinel(CodeChangedDuringRead)
	ErrUnsupported         = sentinel(CodeUnsupported)
	ErrOutcomeUnknown      = sentinel(CodeOutcomeUnknown)
)

type codeError struct{ code Code }

func (e *codeError) Error() string {
	return "exactfs: " + describe(e.code) + " (" + string(e.code) + ")"
}

var (
	sentinelMu sync.Mutex
	sentinels  = map[Code]*codeError{}
)

func sentinel(c Code) error {
	sentinelMu.Lock()
	defer sentinelMu.Unlock()
	if e, ok := sentinels[c]; ok {
		return e
	}
	e := &codeError{c}
	sentinels[c] = e
	return e
}

// Sentinel returns the sentinel of code c: the value errors.Is matches
// against every *Error carrying c. Packages that add codes to the
// vocabulary (store, statelock) make their Err* values with it, so one
// error type serves them all. Calls with one code return one value.
func Sentinel(c Code) error { return sentinel(c) }

// Class returns a sentinel that every *Error carrying one of codes
// matches: one name for an outcome several codes report (statelock's
// ErrLocked: each reason that means "someone holds the lock"). Like a
// code's sentinel, it is an outcome: only the outermost *Error's code
// answers it. text is its message.
func Class(text string, codes ...Code) error {
	return &classError{text: text, codes: append([]Code(nil), codes...)}
}

type classError struct {
	text  string
	codes []Code
}

func (e *classError) Error() string { return e.text }

func (e *classError) has(c Code) bool {
	for _, x := range e.codes {
		if x == c {
			return true
		}
	}
	return false
}

// Error is the error of every exactfs operation, and of the packages built
// on it (store, statelock). It says what was attempted (Op), where (Path),
// what was found (Code, Detail), and wraps the underlying errno or
// *fs.PathError when there is one.
//
// The Code is the outcome, and the outermost *Error's Code is the only one
// errors.Is reports: an Error whose cause is another *Error with another
// code (a lease lost because its file vanished: lease_lost caused by
// not_found) matches its own sentinel and not the cause's, so a caller
// testing for ErrNotFound or fs.ErrNotExist is not told "nothing is there"
// about a lease it lost. The cause stays readable in the message and
// through errors.As.
//
// An Error without an Op carries a whole sentence in Detail (statelock's
// lock failures: "state.json.lock is locked: held by pid 4242 on this host
// (alive) since 12s"): its message is that sentence, its code, then its
// cause. A cause whose message is empty adds nothing to either form: a
// package's cause type that only carries fields its sentence already said
// (statelock's *WaitError: holder, attempts, time waited) prints as the
// error it wraps, and as nothing when it wraps none.
type Error struct {
	Op     string // the operation, e.g. "unlink", "capture", "publish"
	Path   string // the path the operation was given
	Code   Code
	Detail string // what was found, for a person: "expected inode 12, found inode 40"
	Err    error  // the underlying cause, if any
	// Residue lists paths where the operation left named residue that it
	// could not prove safe to remove (Code is cleanup_pending or
	// restore_failed), or could not remove after its own failure (a staged
	// file whose unlink failed too). A reaper or a person can act on them.
	Residue []string
	// Committed is set on an error returned after the mutation reached the
	// filesystem (a lease lost or a binding changed during the call): the
	// change is made, the caller's authority to have made it is not.
	Committed bool
}

func (e *Error) Error() string {
	if e.Op == "" {
		return e.sentence()
	}
	var b strings.Builder
	b.WriteString(e.Op)
	b.WriteString(" ")
	b.WriteString(e.Path)
	b.WriteString(": ")
	if e.Detail != "" {
		b.WriteString(e.Detail)
	} else {
		b.WriteString(describe(e.Code))
	}
	if e.Committed {
		b.WriteString("; the change was committed")
	}
	if e.Err != nil && e.Err.Error() != "" && !(e.Detail == "" && e.Err.Error() == describe(e.Code)) {
		// EACCES reads "permission denied", as permission_denied is
		// described: said once, not twice before the code says it again.
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	b.WriteString(" (")
	b.WriteString(string(e.Code))
	b.WriteString(")")
	if len(e.Residue) > 0 {
		b.WriteString("; residue left at ")
		b.WriteString(strings.Join(e.Residue, ", "))
	}
	return b.String()
}

// sentence is the message of an Error without an Op.
func (e *Error) sentence() string {
	s := e.Detail
	if s == "" {
		s = e.Path + ": " + describe(e.Code)
	}
	s += " (" + string(e.Code) + ")"
	if e.Err != nil && e.Err.Error() != "" {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying cause. When a coded cause sits below (an
// *Error, possibly under an errno-free wrapper), the cause comes back
// behind a view that answers errors.Is for everything except outcomes
// (the code sentinels and fs.ErrNotExist, fs.ErrExist, fs.ErrPermission):
// e's Code is the outcome, not the cause's. errors.As sees through it.
func (e *Error) Unwrap() error {
	if e.Err == nil {
		return nil
	}
	return cause{e.Err}
}

// Is reports whether target is the sentinel of e's code, or a Class that
// holds it. fs.ErrNotExist matches not_found, and fs.ErrExist matches
// destination_exists, so code written against package os keeps working.
func (e *Error) Is(target error) bool {
	match, ok := outcomeOf(target)
	return ok && match(e.Code)
}

// outcomeOf reports whether target is an outcome sentinel, and which codes
// it stands for.
func outcomeOf(target error) (match func(Code) bool, ok bool) {
	is := func(c Code) func(Code) bool { return func(x Code) bool { return x == c } }
	switch t := target.(type) {
	case *codeError:
		return is(t.code), true
	case *classError:
		return t.has, true
	}
	switch target {
	case fs.ErrNotExist:
		return is(CodeNotFound), true
	case fs.ErrExist:
		return is(CodeDestinationExists), true
	case fs.ErrPermission:
		return is(CodePermissionDenied), true
	}
	return nil, false
}

// cause is an *Error's cause as errors.Is and errors.As see it: every
// question but "which outcome?" is passed on to the cause itself.
type cause struct{ err error }

func (c cause) Error() string { return c.err.Error() }

func (c cause) Is(target error) bool {
	if _, ok := outcomeOf(target); ok {
		return false
	}
	return errors.Is(c.err, target)
}

func (c cause) As(target any) bool { return errors.As(c.err, target) }

// CodeOf returns the code carried by err, or "" when err is not from exactfs.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	var s *codeError
	if errors.As(err, &s) {
		return s.code
	}
	return ""
}

func describe(c Code) string {
	switch c {
	case CodeNotFound:
		return "nothing is there"
	case CodeIdentityMismatch:
		return "the object there is not the expected one; nothing was changed"
	case CodeHardLinkUnsupported:
		return "the file has other hard links, whose names would keep its bytes; refusing"
	case CodeReparsePoint:
		return "a symlink is in the way; refusing to follow it"
	case CodeNotRegularFile:
		return "not a regular file; refusing"
	case CodeNotDirectory:
		return "not a directory; refusing"
	case CodeUnsupportedEntry:
		return "the tree holds an entry that is neither a directory nor a regular file"
	case CodeNotUTF8:
		return "a name is not valid UTF-8"
	case CodeParentMismatch:
		return "the parent directory is not the expected one"
	case CodeQuarantineCollision:
		return "the quarantine name already exists; nothing was moved"
	case CodeDestinationExists:
		return "the destination already exists; nothing was replaced"
	case CodeRestoreFailed:
		return "a displaced object could not be put back at its name"
	case CodeCleanupPending:
		return "done, but residue remains"
	case CodeCleanupFailed:
		return "cleanup failed"
	case CodeDurabilityFailed:
		return "the change could not be made durable (fsync failed)"
	case CodeAtomicUnavailable:
		return "the filesystem offers no atomic no-replace or exchange rename; refusing rather than risking another process's file"
	case CodeInvalidRequest:
		return "invalid request"
	case CodeCrossDevice:
		return "source and destination are on different filesystems"
	case CodePermissionDenied:
		return "permission denied"
	case CodeInterrupted:
		return "interrupted"
	case CodeChangedDuringRead:
		return "the file changed while it was read; nothing read can be attributed to it"
	case CodeUnsupported:
		return "unsupported on " + runtime.GOOS
	case CodeOutcomeUnknown:
		return "the write reached the filesystem, but whether the name holds what it wrote cannot be proved; read it again"
	case CodeIOError, "":
		// io_error is every errno without a code of its own (EIO, ENOSPC,
		// EROFS, EDQUOT, ...): the wrapped errno says which.
		return "the filesystem failed the operation"
	}
	// A code another package added (store, statelock): its name, in words.
	return strings.ReplaceAll(string(c), "_", " ")
}

// codeForErrno maps an errno from a system call to the outcome code.
func codeForErrno(err error) Code {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, sys.ErrUnsupported):
		return CodeUnsupported
	case errors.Is(err, syscall.ENOENT):
		return CodeNotFound
	case errors.Is(err, syscall.ELOOP):
		return CodeReparsePoint
	case errors.Is(err, syscall.ENOTDIR):
		return CodeNotDirectory
	case errors.Is(err, syscall.EEXIST), errors.Is(err, syscall.ENOTEMPTY):
		return CodeDestinationExists
	case errors.Is(err, syscall.EXDEV):
		return CodeCrossDevice
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return CodePermissionDenied
	case errors.Is(err, syscall.EINTR):
		return CodeInterrupted
	case errors.Is(err, syscall.ENOSYS):
		return CodeAtomicUnavailable
	}
	return CodeIOError
}

// wrap makes an *Error from a syscall error, classifying the errno.
func wrap(op, path string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Op: op, Path: path, Code: codeForErrno(err), Err: err}
}

func newErr(op, path string, c Code, detail string) *Error {
	return &Error{Op: op, Path: path, Code: c, Detail: detail}
}
