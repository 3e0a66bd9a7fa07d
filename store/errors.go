package store

import (
	"errors"
	"strings"

	"github.com/exactfs/exactfs"
)

// Codes the store adds to the exactfs vocabulary. The security codes are the
// ones the TypeScript peers report (SPEC §5.1).
const (
	CodeOwnerMismatch   exactfs.Code = "owner_mismatch"
	CodeModeMismatch    exactfs.Code = "mode_mismatch"
	CodeACLDenied       exactfs.Code = "acl_denied"
	CodeACLIOError      exactfs.Code = "acl_io_error"
	CodeACLPresent      exactfs.Code = "acl_present"
	CodeACLMalformed    exactfs.Code = "acl_malformed"
	CodeACLUnknown      exactfs.Code = "acl_unknown"
	CodeACLUnavailable  exactfs.Code = "acl_unavailable"
	CodeACLApplyFailed  exactfs.Code = "acl_apply_failed"
	CodeACLVerifyFailed exactfs.Code = "acl_verify_failed"

	// CodeRootChanged: the store's path no longer names the directory the
	// store was bound to.
	CodeRootChanged exactfs.Code = "root_binding_changed"
	// CodeLeaseLost: the lease is no longer ours (the reference reports
	// migration_busy).
	CodeLeaseLost exactfs.Code = "lease_lost"
	// CodeLeaseBusy: another live holder kept the lease for the whole wait.
	CodeLeaseBusy exactfs.Code = "lease_busy"
	// CodeMalformedRecord: a lease record or fence counter could not be
	// parsed; it is never reclaimed by guesswork.
	CodeMalformedRecord exactfs.Code = "malformed_record"
)

// ACL operations and attributes named by ACL failures.
const (
	ACLClear = "clear"
	ACLQuery = "query"

	ACLAccess  = "access"
	ACLDefault = "default"
)

// Sentinels for errors.Is. Shared codes (not_found, reparse_point,
// identity_mismatch, ...) match the exactfs sentinels instead.
var (
	ErrOwnerMismatch   error = &sentinel{CodeOwnerMismatch}
	ErrModeMismatch    error = &sentinel{CodeModeMismatch}
	ErrACLDenied       error = &sentinel{CodeACLDenied}
	ErrACLIOError      error = &sentinel{CodeACLIOError}
	ErrACLPresent      error = &sentinel{CodeACLPresent}
	ErrACLMalformed    error = &sentinel{CodeACLMalformed}
	ErrACLUnknown      error = &sentinel{CodeACLUnknown}
	ErrACLUnavailable  error = &sentinel{CodeACLUnavailable}
	ErrACLApplyFailed  error = &sentinel{CodeACLApplyFailed}
	ErrACLVerifyFailed error = &sentinel{CodeACLVerifyFailed}
	ErrRootChanged     error = &sentinel{CodeRootChanged}
	ErrLeaseLost       error = &sentinel{CodeLeaseLost}
	ErrLeaseBusy       error = &sentinel{CodeLeaseBusy}
	ErrMalformedRecord error = &sentinel{CodeMalformedRecord}
)

type sentinel struct{ code exactfs.Code }

func (s *sentinel) Error() string { return "store: " + string(s.code) }

// Error is the error of the store's own checks: security, binding, leases.
// Failures of the underlying primitives are *exactfs.Error and are returned
// as they are (or wrapped in Err).
type Error struct {
	Op   string // "apply", "verify", "publish", "acquire", "assert", ...
	Path string
	Code exactfs.Code
	// ACLOperation ("clear" or "query") and ACLAttribute ("access" or
	// "default") say which step failed, for the acl_* codes.
	ACLOperation string
	ACLAttribute string
	Detail       string
	Err          error
	// Committed is set on an error returned after a mutation reached the
	// filesystem (a lease lost or a binding changed during the call): the
	// change is made, the caller's authority to have made it is not.
	Committed bool
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	b.WriteString(" ")
	b.WriteString(e.Path)
	b.WriteString(": ")
	if e.Detail != "" {
		b.WriteString(e.Detail)
	} else {
		b.WriteString(string(e.Code))
	}
	if e.ACLOperation != "" {
		b.WriteString(" (acl " + e.ACLOperation + " of the " + e.ACLAttribute + " attribute)")
	}
	if e.Committed {
		b.WriteString("; the change was committed")
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	b.WriteString(" (" + string(e.Code) + ")")
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches the store sentinel of e's code, and the exactfs sentinel of a
// shared code (exactfs.ErrNotFound for not_found, ...).
func (e *Error) Is(target error) bool {
	if s, ok := target.(*sentinel); ok {
		return s.code == e.Code
	}
	var xe *exactfs.Error
	if errors.As(target, &xe) {
		return false
	}
	if c := exactfs.CodeOf(target); c != "" {
		return c == e.Code
	}
	return false
}

// CodeOf returns the code carried by err (a store or an exactfs error), or
// "".
func CodeOf(err error) exactfs.Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	var s *sentinel
	if errors.As(err, &s) {
		return s.code
	}
	return exactfs.CodeOf(err)
}

func newErr(op, path string, c exactfs.Code, detail string, cause error) *Error {
	return &Error{Op: op, Path: path, Code: c, Detail: detail, Err: cause}
}
