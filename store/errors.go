package store

import "github.com/exactfs/exactfs"

// Codes the store adds to the exactfs vocabulary. The security codes are the
// ones the TypeScript peers report.
const (
	CodeOwnerMismatch   = exactfs.CodeOwnerMismatch
	CodeModeMismatch    = exactfs.CodeModeMismatch
	CodeACLDenied       = exactfs.CodeACLDenied
	CodeACLIOError      = exactfs.CodeACLIOError
	CodeACLPresent      = exactfs.CodeACLPresent
	CodeACLMalformed    = exactfs.CodeACLMalformed
	CodeACLUnknown      = exactfs.CodeACLUnknown
	CodeACLUnavailable  = exactfs.CodeACLUnavailable
	CodeACLApplyFailed  = exactfs.CodeACLApplyFailed
	CodeACLVerifyFailed = exactfs.CodeACLVerifyFailed

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

// ACLError is the cause of a failure at an ACL step (exactfs.ACLError),
// reached with errors.As: which operation on which attribute failed.
type ACLError = exactfs.ACLError

// ACL operations and attributes named by ACL failures.
const (
	ACLClear = exactfs.ACLClear
	ACLQuery = exactfs.ACLQuery

	ACLAccess  = exactfs.ACLAccess
	ACLDefault = exactfs.ACLDefault
)

// Sentinels for errors.Is. Shared codes (not_found, reparse_point,
// identity_mismatch, ...) match the exactfs sentinels instead.
var (
	ErrOwnerMismatch   = exactfs.Sentinel(CodeOwnerMismatch)
	ErrModeMismatch    = exactfs.Sentinel(CodeModeMismatch)
	ErrACLDenied       = exactfs.Sentinel(CodeACLDenied)
	ErrACLIOError      = exactfs.Sentinel(CodeACLIOError)
	ErrACLPresent      = exactfs.Sentinel(CodeACLPresent)
	ErrACLMalformed    = exactfs.Sentinel(CodeACLMalformed)
	ErrACLUnknown      = exactfs.Sentinel(CodeACLUnknown)
	ErrACLUnavailable  = exactfs.Sentinel(CodeACLUnavailable)
	ErrACLApplyFailed  = exactfs.Sentinel(CodeACLApplyFailed)
	ErrACLVerifyFailed = exactfs.Sentinel(CodeACLVerifyFailed)
	ErrRootChanged     = exactfs.Sentinel(CodeRootChanged)
	ErrLeaseLost       = exactfs.Sentinel(CodeLeaseLost)
	ErrLeaseBusy       = exactfs.Sentinel(CodeLeaseBusy)
	ErrMalformedRecord = exactfs.Sentinel(CodeMalformedRecord)
)

// Error is the store's error: the one exactfs error type, whose codes the
// store extends with those above. Security failures found at an ACL step
// carry an *ACLError cause; a failure found after a mutation committed sets
// Committed.
type Error = exactfs.Error

// CodeOf returns the code carried by err, or "" (exactfs.CodeOf: the store
// has no error type of its own).
func CodeOf(err error) exactfs.Code { return exactfs.CodeOf(err) }

func newErr(op, path string, c exactfs.Code, detail string, cause error) *Error {
	return &Error{Op: op, Path: path, Code: c, Detail: detail, Err: cause}
}
