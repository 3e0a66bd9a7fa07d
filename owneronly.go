package exactfs

import "os"

// Owner-only: the proof that an open file or directory can be read and
// written by its owner alone, and the repair that makes it so. It lives
// here, beside capture and exact unlink, because it is a proof on a
// descriptor: every step (fstat, fchmod, the ACL calls) acts on the one
// open file, so a path swapped for a link meanwhile cannot redirect it. The
// store decides where to ask for it; this file is how.

// Codes of the owner-only proof. The names are the TypeScript peers'.
const (
	CodeOwnerMismatch   Code = "owner_mismatch"
	CodeModeMismatch    Code = "mode_mismatch"
	CodeACLDenied       Code = "acl_denied"
	CodeACLIOError      Code = "acl_io_error"
	CodeACLPresent      Code = "acl_present"
	CodeACLMalformed    Code = "acl_malformed"
	CodeACLUnknown      Code = "acl_unknown"
	CodeACLUnavailable  Code = "acl_unavailable"
	CodeACLApplyFailed  Code = "acl_apply_failed"
	CodeACLVerifyFailed Code = "acl_verify_failed"
)

// The ACL operations and attributes an ACL failure names in its
// *ACLError cause.
const (
	ACLClear = "clear"
	ACLQuery = "query"

	ACLAccess  = "access"
	ACLDefault = "default"
)

// ApplyOwnerOnly makes the open file or directory f owner-only: it checks
// that the effective user owns it (it never changes the owner:
// owner_mismatch), sets the mode to exactly 0600 (file) or 0700
// (directory) with fchmod, clears the ACL (Linux: the POSIX ACL
// attributes, with fremovexattr, the default ACL of a directory included;
// macOS: the extended ACL, with fsetattrlist, when a query does not prove
// it absent) and queries it again, and finally verifies the result from
// the descriptor. Other systems, whose ACLs this package cannot read, fail
// closed (acl_unavailable).
func ApplyOwnerOnly(f *os.File) error { return ownerOnly("apply", f, true) }

// VerifyOwnerOnly checks, without changing anything, that f is owned by the
// effective user, has mode exactly 0600 (file) or 0700 (directory), and
// carries no ACL.
func VerifyOwnerOnly(f *os.File) error { return ownerOnly("verify", f, false) }

// ownerKind is what an owner-only object is, read from its descriptor.
type ownerKind int

const (
	ownerFile ownerKind = iota + 1
	ownerDir
)

func (k ownerKind) String() string {
	if k == ownerDir {
		return "directory"
	}
	return "file"
}

func (k ownerKind) perm() uint32 {
	if k == ownerDir {
		return 0o700
	}
	return 0o600
}

// ACLError is the cause of an owner-only failure found at an ACL step
// (the acl_* codes): which step (ACLClear or ACLQuery) on which attribute
// (ACLAccess or ACLDefault) failed, and the system's error if there was
// one. It is reached with errors.As; the outcome stays the *Error's Code:
//
//	var acl *exactfs.ACLError
//	if errors.As(err, &acl) && acl.Attribute == exactfs.ACLDefault { ... }
type ACLError struct {
	Operation string // ACLClear or ACLQuery
	Attribute string // ACLAccess or ACLDefault
	Err       error  // the system's error, or nil
}

func (e *ACLError) Error() string {
	s := "acl " + e.Operation + " of the " + e.Attribute + " attribute"
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *ACLError) Unwrap() error { return e.Err }

func ownerErr(op, path string, c Code, detail string, cause error) *Error {
	return &Error{Op: op, Path: path, Code: c, Detail: detail, Err: cause}
}

// aclErr is ownerErr for a failure at an ACL step: the step is its cause.
func aclErr(op, path string, c Code, aclOp, attr, detail string, cause error) error {
	return ownerErr(op, path, c, detail, &ACLError{Operation: aclOp, Attribute: attr, Err: cause})
}
