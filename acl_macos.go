//go:build unix

package exactfs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
)

// The macOS extended-ACL check, built on every Unix so that it is
// unit-tested on Linux (acl_macos_test.go) against a model of xnu; only
// acl_darwin.go binds it to the kernel's calls. The errno values are darwin's
// (bsd/sys/errno.h), not the host's: acl_darwin.go checks at compile time
// that they equal package syscall's on darwin.
//
// Layouts, from xnu's bsd/sys/attr.h, bsd/sys/kauth.h and
// bsd/vfs/vfs_attrlist.c (both darwin architectures are little-endian):
//
//	getattrlist reply: u32 total length (itself included), then for
//	ATTR_CMN_EXTENDED_SECURITY an attrreference {i32 offset from the
//	attrreference itself, u32 length}. Length 0: no ACL, or a filesystem
//	that cannot hold one (the kernel packs an empty reference for both).
//	kauth_filesec: u32 magic 0x012cc16d, 16-byte owner GUID, 16-byte group
//	GUID, then kauth_acl {u32 entry count, u32 flags, 24-byte entries};
//	entry count 0xffffffff (KAUTH_FILESEC_NOACL) means "no ACL".
//	setattrlist request: the same attrreference with no leading length; a
//	filesec whose entry count is KAUTH_FILESEC_NOACL deletes the ACL
//	(setattrlist_internal sets va_acl to NULL).
const (
	darwinEPERM      = syscall.Errno(1)
	darwinEIO        = syscall.Errno(5)
	darwinEACCES     = syscall.Errno(13)
	darwinENOTSUP    = syscall.Errno(45)
	darwinENOATTR    = syscall.Errno(93)
	darwinEOPNOTSUPP = syscall.Errno(102)

	kauthFilesecMagic   = 0x012cc16d
	kauthFilesecNoACL   = 0xffffffff
	kauthACLMaxEntries  = 128                 // KAUTH_ACL_MAX_ENTRIES
	kauthFilesecHeader  = 4 + 16 + 16 + 4 + 4 // KAUTH_FILESEC_SIZE(0)
	kauthACESize        = 16 + 4 + 4          // GUID, flags, rights
	attrReferenceSize   = 8
	macACLReplyCapacity = 4 + attrReferenceSize + kauthFilesecHeader + kauthACLMaxEntries*kauthACESize
)

// macRemoveACLRequest is the fsetattrlist buffer that deletes a file's
// extended ACL: an attrreference pointing just past itself at a filesec
// with zero GUIDs and the "no ACL" entry count. It does the same as
// fchmod_extended with _FILESEC_REMOVE_ACL (chmod -N) through a public call.
func macRemoveACLRequest() []byte {
	b := make([]byte, attrReferenceSize+kauthFilesecHeader)
	binary.LittleEndian.PutUint32(b[0:], attrReferenceSize)  // offset from the reference
	binary.LittleEndian.PutUint32(b[4:], kauthFilesecHeader) // must equal KAUTH_FILESEC_COPYSIZE
	f := b[attrReferenceSize:]
	binary.LittleEndian.PutUint32(f[0:], kauthFilesecMagic)
	binary.LittleEndian.PutUint32(f[36:], kauthFilesecNoACL)
	return b
}

// macACLNeedsClear decides, from a query made before the removal, whether
// the removal is needed: only a query that proved "no ACL" spares it. A
// query refused (an entry that denies the owner readsecurity), malformed or
// failed still tries the removal, which the owner may make regardless; the
// query after it decides.
func macACLNeedsClear(c Code, _ string) bool { return c != "" }

// macACLClearOutcome maps the fsetattrlist result onto SPEC §5.1's codes;
// "" is success. A filesystem that cannot hold an ACL (ENOTSUP,
// EOPNOTSUPP) or has none to remove (ENOATTR, from the kernel's xattr
// fallback) succeeds: the query that follows decides.
func macACLClearOutcome(err error) (Code, string) {
	if err == nil {
		return "", ""
	}
	var en syscall.Errno
	if !errors.As(err, &en) {
		return CodeACLUnknown, "the extended ACL could not be removed"
	}
	switch en {
	case darwinENOTSUP, darwinEOPNOTSUPP, darwinENOATTR:
		return "", ""
	case darwinEPERM, darwinEACCES:
		return CodeACLDenied, "macOS refused to let this process remove the extended ACL (fsetattrlist); ls -le shows it, chmod -N removes it where permitted"
	case darwinEIO:
		return CodeACLIOError, "I/O error removing the extended ACL"
	}
	return CodeACLUnknown, "the extended ACL could not be removed"
}

// macACLQueryOutcome maps the fgetattrlist result (its errno and reply
// buffer) onto SPEC §5.1's codes; "" means no ACL can grant access. An ACL
// with zero entries still counts as present, as any ACL attribute does on
// Linux: the check is "no ACL", not "no harmful entry".
func macACLQueryOutcome(err error, reply []byte) (Code, string) {
	if err != nil {
		var en syscall.Errno
		if !errors.As(err, &en) {
			return CodeACLUnknown, "the extended ACL could not be queried"
		}
		switch en {
		case darwinENOTSUP, darwinEOPNOTSUPP:
			return "", ""
		case darwinEPERM, darwinEACCES:
			return CodeACLDenied, "macOS refused to show the extended ACL (fgetattrlist); owner-only cannot be proved, refusing"
		case darwinEIO:
			return CodeACLIOError, "I/O error querying the extended ACL"
		}
		return CodeACLUnknown, "the extended ACL could not be queried"
	}
	malformed := func(what string) (Code, string) {
		return CodeACLMalformed, "the kernel's extended-security reply is not in the layout this code reads: " + what
	}
	if len(reply) < 4+attrReferenceSize {
		return malformed(fmt.Sprintf("%d bytes, want at least %d", len(reply), 4+attrReferenceSize))
	}
	total := binary.LittleEndian.Uint32(reply)
	if total < 4+attrReferenceSize || uint64(total) > uint64(len(reply)) {
		return malformed(fmt.Sprintf("reply length %d outside [%d, %d]", total, 4+attrReferenceSize, len(reply)))
	}
	off := int64(int32(binary.LittleEndian.Uint32(reply[4:])))
	n := int64(binary.LittleEndian.Uint32(reply[8:]))
	if n == 0 {
		return "", "" // no ACL, or a filesystem that cannot hold one
	}
	start := 4 + off
	if start < 4+attrReferenceSize || start+n > int64(total) {
		return malformed(fmt.Sprintf("ACL data at [%d, %d) outside the %d-byte reply", start, start+n, total))
	}
	if n < kauthFilesecHeader {
		return malformed(fmt.Sprintf("ACL data of %d bytes, shorter than a filesec (%d)", n, kauthFilesecHeader))
	}
	fsec := reply[start : start+n]
	if m := binary.LittleEndian.Uint32(fsec); m != kauthFilesecMagic {
		return malformed(fmt.Sprintf("filesec magic %#x, want %#x", m, kauthFilesecMagic))
	}
	count := binary.LittleEndian.Uint32(fsec[36:])
	if count == kauthFilesecNoACL {
		if n != kauthFilesecHeader {
			return malformed(fmt.Sprintf("a filesec without ACL of %d bytes, want %d", n, kauthFilesecHeader))
		}
		return "", ""
	}
	if count > kauthACLMaxEntries {
		return malformed(fmt.Sprintf("%d ACL entries, the kernel allows %d", count, kauthACLMaxEntries))
	}
	if want := int64(kauthFilesecHeader) + int64(count)*kauthACESize; n != want {
		return malformed(fmt.Sprintf("%d ACL entries in %d bytes, want %d bytes", count, n, want))
	}
	entries := "entries"
	if count == 1 {
		entries = "entry"
	}
	return CodeACLPresent, fmt.Sprintf("an extended ACL with %d %s is present (ls -le shows it; chmod -N removes it)", count, entries)
}

// macACLCalls are the two calls the macOS check makes on a descriptor,
// fgetattrlist and fsetattrlist with ATTR_CMN_EXTENDED_SECURITY alone:
// acl_darwin.go binds them to the kernel, tests to a model of xnu.
type macACLCalls struct {
	get func(fd int, reply []byte) error
	set func(fd int, request []byte) error
}

// clear removes the extended ACL unless a query proves there is none:
// unlike Linux's fremovexattr of an absent attribute, a removal through
// fsetattrlist is a metadata write (it moves ctime), which a new file with
// no ACL, the usual case, need not pay.
func (m macACLCalls) clear(op, path string, fd int, attr string) error {
	reply := make([]byte, macACLReplyCapacity)
	if !macACLNeedsClear(macACLQueryOutcome(m.get(fd, reply), reply)) {
		return nil
	}
	err := m.set(fd, macRemoveACLRequest())
	if c, detail := macACLClearOutcome(err); c != "" {
		return aclErr(op, path, c, ACLClear, attr, detail, err)
	}
	return nil
}

// query fails unless the kernel shows no extended ACL.
func (m macACLCalls) query(op, path string, fd int, attr string) error {
	reply := make([]byte, macACLReplyCapacity)
	err := m.get(fd, reply)
	if c, detail := macACLQueryOutcome(err, reply); c != "" {
		return aclErr(op, path, c, ACLQuery, attr, detail, err)
	}
	return nil
}

// probe is exactfs doctor's ACL line on macOS, made on the probe's own new
// file with the calls the store makes: a query (a new file may inherit an
// ACL from its directory's file_inherit entries), the removal request sent
// whatever the query found (so that the kernel checks its layout: an
// EINVAL here is a bug in macRemoveACLRequest), and a query again, which
// must find none. It is the first place a user's Mac runs fgetattrlist and
// fsetattrlist, so it says which call failed and with what. Supported stays
// false: the line is about POSIX ACLs, which macOS does not have.
func (m macACLCalls) probe(fd int) ProbeResult {
	const pre = "none (macOS has extended ACLs instead); "
	reply := make([]byte, macACLReplyCapacity)
	err := m.get(fd, reply)
	var en syscall.Errno
	if errors.As(err, &en) && (en == darwinENOTSUP || en == darwinEOPNOTSUPP) {
		return ProbeResult{false, pre + "this filesystem holds no extended ACLs either (fgetattrlist: " + macErrnoText(err) + "): the mode bits decide here"}
	}
	before, detail := macACLQueryOutcome(err, reply)
	found := "a new file here has none"
	switch before {
	case "":
	case CodeACLPresent:
		found = "a new file here inherits one from this directory (" + detail + ")"
	default:
		return ProbeResult{false, pre + "the store's query of them fails here: " + string(before) + ": " + detail + macCause(err)}
	}
	if err := m.set(fd, macRemoveACLRequest()); err != nil {
		if c, detail := macACLClearOutcome(err); c != "" {
			return ProbeResult{false, pre + "the store's removal of them fails here: " + string(c) + ": " + detail + macCause(err)}
		}
	}
	err = m.get(fd, reply)
	if after, detail := macACLQueryOutcome(err, reply); after != "" {
		return ProbeResult{false, pre + "after the store's removal the query still fails: " + string(after) + ": " + detail + macCause(err)}
	}
	return ProbeResult{false, pre + "the store's check of them works here (fgetattrlist, fsetattrlist): " + found + "; removed and verified absent"}
}

// macCause is " (ERRNO)" for a call that failed, "" for one that answered.
func macCause(err error) string {
	if err == nil {
		return ""
	}
	return " (" + macErrnoText(err) + ")"
}

// macErrnoText names err by darwin's errno numbers, on every platform (the
// probe's decisions are tested on Linux, whose names for them differ).
func macErrnoText(err error) string {
	var en syscall.Errno
	if !errors.As(err, &en) {
		return err.Error()
	}
	names := map[syscall.Errno]string{darwinEPERM: "EPERM", darwinEIO: "EIO", 9: "EBADF", darwinEACCES: "EACCES",
		22: "EINVAL", 30: "EROFS", darwinENOTSUP: "ENOTSUP", darwinENOATTR: "ENOATTR", darwinEOPNOTSUPP: "EOPNOTSUPP"}
	if n, ok := names[en]; ok {
		return n
	}
	return fmt.Sprintf("errno %d", int(en))
}
