//go:build unix

package exactfs

import (
	"encoding/binary"
	"errors"
	"strings"
	"syscall"
	"testing"
)

// macReply builds an fgetattrlist reply the way xnu's vfs_attr_pack does for
// ATTR_CMN_EXTENDED_SECURITY alone: the length word, the attrreference, and
// the filesec right after it (offset 8 from the reference).
func macReply(entries uint32, aceCount int) []byte {
	n := 0
	if entries != 0xdead {
		n = kauthFilesecHeader + aceCount*kauthACESize
	}
	b := make([]byte, macACLReplyCapacity)
	total := 4 + attrReferenceSize + n
	binary.LittleEndian.PutUint32(b, uint32(total))
	if n > 0 {
		binary.LittleEndian.PutUint32(b[4:], attrReferenceSize)
		binary.LittleEndian.PutUint32(b[8:], uint32(n))
		f := b[12:]
		binary.LittleEndian.PutUint32(f, kauthFilesecMagic)
		binary.LittleEndian.PutUint32(f[36:], entries)
	}
	return b
}

func TestMacACLQueryDecisionTable(t *testing.T) {
	absent := macReply(0xdead, 0) // empty attrreference: no ACL, or no ACL support
	noACL := macReply(kauthFilesecNoACL, 0)
	three := macReply(3, 3)
	empty := macReply(0, 0)
	full := macReply(kauthACLMaxEntries, kauthACLMaxEntries)
	mut := func(b []byte, f func([]byte)) []byte { c := append([]byte(nil), b...); f(c); return c }
	cases := []struct {
		name  string
		err   error
		reply []byte
		want  Code
		hint  string
	}{
		{"no ACL (empty reference)", nil, absent, "", ""},
		{"filesec without ACL", nil, noACL, "", ""},
		{"three entries", nil, three, CodeACLPresent, "3 entries"},
		{"empty ACL is still an ACL", nil, empty, CodeACLPresent, "0 entries"},
		{"kernel maximum", nil, full, CodeACLPresent, "128 entries"},
		{"one entry", nil, macReply(1, 1), CodeACLPresent, "1 entry is"},
		{"EPERM", syscall.Errno(1), nil, CodeACLDenied, "refused"},
		{"EACCES", syscall.Errno(13), nil, CodeACLDenied, "refused"},
		{"EIO", syscall.Errno(5), nil, CodeACLIOError, "I/O"},
		{"ENOTSUP: cannot hold one", syscall.Errno(45), nil, "", ""},
		{"EOPNOTSUPP: cannot hold one", syscall.Errno(102), nil, "", ""},
		{"EBADF", syscall.Errno(9), nil, CodeACLUnknown, "could not be queried"},
		{"ENOATTR is not expected from fgetattrlist", syscall.Errno(93), nil, CodeACLUnknown, "could not be queried"},
		{"not an errno", errors.New("boom"), nil, CodeACLUnknown, "could not be queried"},
		{"short reply", nil, make([]byte, 11), CodeACLMalformed, "11 bytes"},
		{"length word beyond the buffer", nil, mut(three, func(b []byte) { binary.LittleEndian.PutUint32(b, uint32(len(b)+1)) }), CodeACLMalformed, "reply length"},
		{"length word too small", nil, mut(three, func(b []byte) { binary.LittleEndian.PutUint32(b, 8) }), CodeACLMalformed, "reply length"},
		{"offset into the header", nil, mut(three, func(b []byte) { binary.LittleEndian.PutUint32(b[4:], 0) }), CodeACLMalformed, "outside"},
		{"negative offset", nil, mut(three, func(b []byte) { binary.LittleEndian.PutUint32(b[4:], 0xfffffff8) }), CodeACLMalformed, "outside"},
		{"data past the reply", nil, mut(three, func(b []byte) { binary.LittleEndian.PutUint32(b[8:], 200) }), CodeACLMalformed, "outside"},
		{"shorter than a filesec", nil, mut(three, func(b []byte) {
			binary.LittleEndian.PutUint32(b[8:], 40)
		}), CodeACLMalformed, "shorter than a filesec"},
		{"bad magic", nil, mut(three, func(b []byte) { b[12] ^= 1 }), CodeACLMalformed, "magic"},
		{"entry count disagrees with length", nil, mut(three, func(b []byte) { binary.LittleEndian.PutUint32(b[12+36:], 4) }), CodeACLMalformed, "4 ACL entries"},
		{"too many entries", nil, mut(full, func(b []byte) { binary.LittleEndian.PutUint32(b[12+36:], kauthACLMaxEntries+1) }), CodeACLMalformed, "allows 128"},
		{"no-ACL filesec with trailing bytes", nil, mut(three, func(b []byte) { binary.LittleEndian.PutUint32(b[12+36:], kauthFilesecNoACL) }), CodeACLMalformed, "without ACL"},
	}
	for _, c := range cases {
		got, detail := macACLQueryOutcome(c.err, c.reply)
		if got != c.want || !strings.Contains(detail, c.hint) {
			t.Errorf("%s: got %q %q, want %q containing %q", c.name, got, detail, c.want, c.hint)
		}
	}
}

// Apply removes the ACL unless a query proved there is none: a refused or
// unreadable answer still tries the removal.
func TestMacACLNeedsClear(t *testing.T) {
	for _, c := range []struct {
		err   error
		reply []byte
		want  bool
	}{
		{nil, macReply(0xdead, 0), false},
		{nil, macReply(kauthFilesecNoACL, 0), false},
		{syscall.Errno(45), nil, false},
		{nil, macReply(2, 2), true},
		{nil, macReply(0, 0), true},
		{syscall.Errno(13), nil, true},
		{syscall.Errno(5), nil, true},
		{nil, make([]byte, 3), true},
	} {
		if got := macACLNeedsClear(macACLQueryOutcome(c.err, c.reply)); got != c.want {
			t.Errorf("query %v: needs clear %v, want %v", c.err, got, c.want)
		}
	}
}

func TestMacACLClearDecisionTable(t *testing.T) {
	cases := []struct {
		err  error
		want Code
	}{
		{nil, ""},
		{syscall.Errno(45), ""},  // ENOTSUP: the filesystem cannot hold an ACL
		{syscall.Errno(102), ""}, // EOPNOTSUPP
		{syscall.Errno(93), ""},  // ENOATTR: the xattr fallback had nothing to remove
		{syscall.Errno(1), CodeACLDenied},
		{syscall.Errno(13), CodeACLDenied},
		{syscall.Errno(5), CodeACLIOError},
		{syscall.Errno(22), CodeACLUnknown}, // EINVAL: the kernel rejected the request
		{errors.New("boom"), CodeACLUnknown},
	}
	for _, c := range cases {
		if got, _ := macACLClearOutcome(c.err); got != c.want {
			t.Errorf("clear %v: got %q, want %q", c.err, got, c.want)
		}
	}
}

// The removal request must pass the checks xnu's setattrlist_internal makes
// before it sets va_acl to NULL, restated here from bsd/vfs/vfs_attrlist.c.
func TestMacRemoveACLRequestPassesKernelChecks(t *testing.T) {
	b := macRemoveACLRequest()
	if len(b) != 52 {
		t.Fatalf("request is %d bytes, want 52 (attrreference 8 + KAUTH_FILESEC_SIZE(0) 44)", len(b))
	}
	off := int32(binary.LittleEndian.Uint32(b))
	length := binary.LittleEndian.Uint32(b[4:])
	if off < 0 {
		t.Fatal("negative attr_dataoffset: EINVAL")
	}
	f := b[off:] // cp = cursor (the reference) + attr_dataoffset
	if len(f) < kauthFilesecHeader {
		t.Fatal("no space for the filesec: EINVAL")
	}
	if m := binary.LittleEndian.Uint32(f); m != kauthFilesecMagic {
		t.Fatalf("magic %#x: EINVAL", m)
	}
	count := binary.LittleEndian.Uint32(f[36:])
	copySize := uint32(kauthFilesecHeader)
	if count != kauthFilesecNoACL {
		t.Fatalf("entry count %#x: this would set an ACL, not delete it", count)
	}
	if copySize != length || int(copySize) > len(f) {
		t.Fatalf("KAUTH_FILESEC_COPYSIZE %d, attr_length %d, room %d: EINVAL", copySize, length, len(f))
	}
	for i, x := range f[4:36] {
		if x != 0 {
			t.Fatalf("GUID byte %d is %#x, want zero", i, x)
		}
	}
}

// xnuACL models what xnu does with the two calls on one file, from
// bsd/vfs/vfs_attrlist.c and vnode_authorize_simple: a query packs the ACL
// (or an empty reference), refused with EACCES when an entry denies the
// owner readsecurity; a removal request is checked as setattrlist_internal
// checks it, and the owner may always make it (WRITE_SECURITY is implicit
// for the owner).
type xnuACL struct {
	aces          int // -1: no ACL
	denyOwnerRead bool
	setErr        error // a refusal the model cannot derive (immutable, read-only volume)
	sets          int
}

func (k *xnuACL) calls() macACLCalls { return macACLCalls{get: k.get, set: k.set} }

func (k *xnuACL) get(_ int, reply []byte) error {
	if k.aces >= 0 && k.denyOwnerRead {
		return syscall.Errno(13)
	}
	entries := uint32(0xdead)
	if k.aces >= 0 {
		entries = uint32(k.aces)
	}
	copy(reply, macReply(entries, max(k.aces, 0)))
	return nil
}

func (k *xnuACL) set(_ int, req []byte) error {
	if len(req) < attrReferenceSize {
		return syscall.Errno(22)
	}
	off := int32(binary.LittleEndian.Uint32(req))
	length := binary.LittleEndian.Uint32(req[4:])
	if off < 0 || int(off)+kauthFilesecHeader > len(req) {
		return syscall.Errno(22)
	}
	f := req[off:]
	count := binary.LittleEndian.Uint32(f[36:])
	copySize := uint32(kauthFilesecHeader)
	if count != kauthFilesecNoACL {
		copySize += count * kauthACESize
	}
	if binary.LittleEndian.Uint32(f) != kauthFilesecMagic || copySize != length || int(copySize) > len(f) {
		return syscall.Errno(22)
	}
	if k.setErr != nil {
		return k.setErr
	}
	k.sets++
	if count == kauthFilesecNoACL {
		k.aces, k.denyOwnerRead = -1, false
	} else {
		k.aces = int(count)
	}
	return nil
}

// Apply's clear-then-query and Verify's query, run against the model: the
// outcome, and whether a removal was written.
func TestMacACLAgainstXNUModel(t *testing.T) {
	for _, c := range []struct {
		name        string
		k           xnuACL
		verify      Code // a query before anything
		apply       Code // clear, then query
		applyOp     string
		wantSets    int
		afterVerify Code
	}{
		{"no ACL: nothing written", xnuACL{aces: -1}, "", "", "", 0, ""},
		{"two entries: removed", xnuACL{aces: 2}, CodeACLPresent, "", "", 1, ""},
		{"an empty ACL: removed", xnuACL{aces: 0}, CodeACLPresent, "", "", 1, ""},
		{"the owner may not read it, but may remove it", xnuACL{aces: 1, denyOwnerRead: true}, CodeACLDenied, "", "", 1, ""},
		{"removal refused", xnuACL{aces: 1, setErr: syscall.Errno(1)}, CodeACLPresent, CodeACLDenied, ACLClear, 0, CodeACLPresent},
		{"removal I/O error", xnuACL{aces: 1, setErr: syscall.Errno(5)}, CodeACLPresent, CodeACLIOError, ACLClear, 0, CodeACLPresent},
		{"read-only volume", xnuACL{aces: 1, setErr: syscall.Errno(30)}, CodeACLPresent, CodeACLUnknown, ACLClear, 0, CodeACLPresent},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := c.k
			m := k.calls()
			code := func(err error) (Code, string) {
				var e *Error
				if err == nil {
					return "", ""
				}
				if !errors.As(err, &e) {
					t.Fatalf("not a store error: %v", err)
				}
				var acl *ACLError
				if !errors.As(err, &acl) {
					return e.Code, ""
				}
				return e.Code, acl.Operation
			}
			if got, _ := code(m.query("verify", "p", 3, ACLAccess)); got != c.verify {
				t.Fatalf("verify: %q, want %q", got, c.verify)
			}
			err := m.clear("apply", "p", 3, ACLAccess)
			if err == nil {
				err = m.query("apply", "p", 3, ACLAccess)
			}
			if got, op := code(err); got != c.apply || op != c.applyOp {
				t.Fatalf("apply: %q (%s), want %q (%s): %v", got, op, c.apply, c.applyOp, err)
			}
			if k.sets != c.wantSets {
				t.Fatalf("%d removals written, want %d", k.sets, c.wantSets)
			}
			if got, _ := code(m.query("verify", "p", 3, ACLAccess)); got != c.afterVerify {
				t.Fatalf("verify after apply: %q, want %q", got, c.afterVerify)
			}
		})
	}
}
