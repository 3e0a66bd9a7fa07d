package exactfs

import (
	"encoding/binary"
	"errors"
	"syscall"

	"github.com/exactfs/exactfs/internal/sys"
)

// The POSIX ACL extended attributes of Linux.
const (
	xattrACLAccess  = "system.posix_acl_access"
	xattrACLDefault = "system.posix_acl_default"
)

func aclAttributes(k ownerKind) []string {
	if k == ownerDir {
		return []string{ACLAccess, ACLDefault}
	}
	return []string{ACLAccess}
}

func xattrName(attr string) string {
	if attr == ACLDefault {
		return xattrACLDefault
	}
	return xattrACLAccess
}

// aclClear removes one ACL attribute. "No such attribute" means it was
// already absent and "not supported" means the filesystem cannot hold one;
// both are success.
func aclClear(op, path string, fd int, attr string) error {
	err := sys.Fremovexattr(fd, xattrName(attr))
	switch {
	case err == nil, errors.Is(err, syscall.ENODATA), errors.Is(err, syscall.ENOTSUP), errors.Is(err, syscall.EOPNOTSUPP):
		return nil
	}
	return aclFailure(op, path, ACLClear, attr, err)
}

// aclQuery fails unless the attribute is absent (or unsupported).
func aclQuery(op, path string, fd int, attr string) error {
	name := xattrName(attr)
	for range 3 {
		n, err := sys.Fgetxattr(fd, name, nil)
		switch {
		case errors.Is(err, syscall.ENODATA), errors.Is(err, syscall.ENOTSUP), errors.Is(err, syscall.EOPNOTSUPP):
			return nil
		case err != nil:
			return aclFailure(op, path, ACLQuery, attr, err)
		}
		buf := make([]byte, n)
		n, err = sys.Fgetxattr(fd, name, buf)
		if errors.Is(err, syscall.ERANGE) {
			continue // it grew between the two calls
		}
		if errors.Is(err, syscall.ENODATA) {
			return nil
		}
		if err != nil {
			return aclFailure(op, path, ACLQuery, attr, err)
		}
		if !wellFormedACL(buf[:n]) {
			return aclErr(op, path, CodeACLMalformed, ACLQuery, attr, "an ACL attribute is present and is not a POSIX ACL this code can read", nil)
		}
		return aclErr(op, path, CodeACLPresent, ACLQuery, attr, "a POSIX ACL grants access beyond the owner", nil)
	}
	return aclErr(op, path, CodeACLUnknown, ACLQuery, attr, "the ACL attribute kept changing size while it was read", nil)
}

// wellFormedACL checks the kernel's xattr layout: a 4-byte version (2)
// followed by 8-byte entries.
func wellFormedACL(b []byte) bool {
	return len(b) >= 4 && binary.LittleEndian.Uint32(b) == 2 && (len(b)-4)%8 == 0
}

func aclFailure(op, path, aclOp, attr string, err error) error {
	var c Code
	switch {
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		c = CodeACLDenied
	case errors.Is(err, syscall.EIO):
		c = CodeACLIOError
	default:
		c = CodeACLUnknown
	}
	return aclErr(op, path, c, aclOp, attr, "the ACL attribute could not be "+map[string]string{ACLClear: "cleared", ACLQuery: "queried"}[aclOp], err)
}
