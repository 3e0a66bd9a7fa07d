package store

import (
	"errors"
	"syscall"

	"github.com/exactfs/exactfs/internal/sys"
)

// macOS keeps a file's extended ACL (inherited entries included) in one
// attribute the kernel manages. Its presence is what "has an ACL" means
// here. The kernel reserves the com.apple.system. namespace: as far as we
// know only root may read or remove it, so for other users every query is
// refused (EPERM) and owner-only security fails closed with acl_denied,
// naming the step. Reading ACLs as an ordinary user needs acl_get_fd_np
// from libSystem, which this package does not call (no cgo). Untested: no
// macOS machine in CI.
const xattrSecurity = "com.apple.system.Security"

func aclAttributes(Kind) []string { return []string{ACLAccess} }

func aclClear(op, path string, fd int, attr string) error {
	err := sys.Fremovexattr(fd, xattrSecurity)
	if err == nil || errors.Is(err, syscall.ENOATTR) {
		return nil
	}
	c := CodeACLApplyFailed
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
		c = CodeACLDenied
	}
	return aclErr(op, path, c, ACLClear, attr, "the extended ACL could not be removed", err)
}

func aclQuery(op, path string, fd int, attr string) error {
	_, err := sys.Fgetxattr(fd, xattrSecurity, nil)
	switch {
	case errors.Is(err, syscall.ENOATTR):
		return nil
	case err == nil:
		return aclErr(op, path, CodeACLPresent, ACLQuery, attr, "an extended ACL is present", nil)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return aclErr(op, path, CodeACLDenied, ACLQuery, attr,
			"macOS refuses to show this process the extended ACL ("+xattrSecurity+"); owner-only cannot be proved, refusing", err)
	}
	return aclErr(op, path, CodeACLUnknown, ACLQuery, attr, "the extended ACL could not be queried", err)
}
