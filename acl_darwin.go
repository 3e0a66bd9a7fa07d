package exactfs

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/exactfs/exactfs/internal/sys"
)

// macOS keeps a file's extended ACL (inherited entries included) in one
// kernel-managed object; "has an ACL" means that object holds an ACL. It is
// read and removed through the descriptor with fgetattrlist/fsetattrlist
// and ATTR_CMN_EXTENDED_SECURITY. The owner may always remove it (xnu
// grants the owner WRITE_SECURITY implicitly) and may read it unless an ACL
// entry denies the owner readsecurity (then the query answers EACCES:
// acl_denied, and Apply still removes it). The xattr
// com.apple.system.Security that stores it is not usable: the kernel
// refuses to remove it for every caller and to read it for every caller but
// root. What the calls return is decided in acl_macos.go, unit-tested on
// every Unix against a model of xnu.
//
// Not yet run on a Mac: MACOS.md lists the checks that would confirm it.

// The decision table uses darwin's errno numbers on every platform; these
// fail to compile if package syscall ever disagreed with them.
var (
	_ [darwinEPERM - syscall.EPERM]struct{}
	_ [syscall.EPERM - darwinEPERM]struct{}
	_ [darwinEIO - syscall.EIO]struct{}
	_ [syscall.EIO - darwinEIO]struct{}
	_ [darwinEACCES - syscall.EACCES]struct{}
	_ [syscall.EACCES - darwinEACCES]struct{}
	_ [darwinENOTSUP - syscall.ENOTSUP]struct{}
	_ [syscall.ENOTSUP - darwinENOTSUP]struct{}
	_ [darwinENOATTR - syscall.ENOATTR]struct{}
	_ [syscall.ENOATTR - darwinENOATTR]struct{}
	_ [darwinEOPNOTSUPP - syscall.EOPNOTSUPP]struct{}
	_ [syscall.EOPNOTSUPP - darwinEOPNOTSUPP]struct{}
)

func aclAttributes(ownerKind) []string { return []string{ACLAccess} }

var extendedSecurity = unix.Attrlist{
	Bitmapcount: unix.ATTR_BIT_MAP_COUNT,
	Commonattr:  unix.ATTR_CMN_EXTENDED_SECURITY,
}

var macKernel = macACLCalls{
	get: func(fd int, reply []byte) error {
		a := extendedSecurity
		return sys.Fgetattrlist(fd, &a, reply, 0)
	},
	set: func(fd int, request []byte) error {
		a := extendedSecurity
		return sys.Fsetattrlist(fd, &a, request, 0)
	},
}

func aclClear(op, path string, fd int, attr string) error { return macKernel.clear(op, path, fd, attr) }

func aclQuery(op, path string, fd int, attr string) error { return macKernel.query(op, path, fd, attr) }
