//go:build unix

package exactfs

import (
	"strings"
	"syscall"
	"testing"
)

// TestMacProbeACL: doctor's ACL line on macOS runs the store's calls on its
// probe file and says which one failed, against the model of xnu in
// acl_macos_test.go (which also refuses a removal request whose layout the
// kernel would refuse). Until this, doctor said "not probed on macOS", and
// fgetattrlist/fsetattrlist first ran inside a store.
func TestMacProbeACL(t *testing.T) {
	enotsup := macACLCalls{
		get: func(int, []byte) error { return syscall.Errno(45) },
		set: func(int, []byte) error { t.Fatal("removal sent where the filesystem holds no ACLs"); return nil },
	}
	for _, c := range []struct {
		name     string
		calls    func(k *xnuACL) macACLCalls
		k        xnuACL
		want     []string
		wantSets int
	}{
		{"a new file without an ACL", nil, xnuACL{aces: -1}, []string{"check of them works here", "a new file here has none", "removed and verified absent"}, 1},
		{"an inherited ACL", nil, xnuACL{aces: 2}, []string{"works here", "inherits one from this directory", "2 entries", "removed and verified absent"}, 1},
		{"an inherited entry denies the owner readsecurity", nil, xnuACL{aces: 1, denyOwnerRead: true}, []string{"query of them fails", "acl_denied", "(EACCES)"}, 0},
		{"removal refused", nil, xnuACL{aces: -1, setErr: syscall.Errno(1)}, []string{"removal of them fails", "acl_denied", "(EPERM)"}, 0},
		{"read-only volume", nil, xnuACL{aces: -1, setErr: syscall.Errno(30)}, []string{"removal of them fails", "acl_unknown", "(EROFS)"}, 0},
		{"no extended ACLs on this filesystem", func(*xnuACL) macACLCalls { return enotsup }, xnuACL{}, []string{"holds no extended ACLs either", "ENOTSUP", "mode bits decide"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := c.k
			calls := k.calls()
			if c.calls != nil {
				calls = c.calls(&k)
			}
			r := calls.probe(3)
			if r.Supported {
				t.Errorf("Supported: the line is about POSIX ACLs, which macOS lacks")
			}
			if !strings.HasPrefix(r.Detail, "none (macOS has extended ACLs instead); ") {
				t.Errorf("detail %q does not open with what macOS has", r.Detail)
			}
			for _, w := range c.want {
				if !strings.Contains(r.Detail, w) {
					t.Errorf("detail %q lacks %q", r.Detail, w)
				}
			}
			if k.sets != c.wantSets {
				t.Errorf("%d removals accepted, want %d", k.sets, c.wantSets)
			}
		})
	}
}

// TestMacNoOFDDetail: doctor's OFD line on macOS names the evidence a
// darwin holder is judged by. It said "by pid and start time" after darwin
// records stopped carrying a start time.
func TestMacNoOFDDetail(t *testing.T) {
	for _, w := range []string{"pid", "zombie", "boot id", "no start time"} {
		if !strings.Contains(macNoOFD, w) {
			t.Errorf("%q lacks %q", macNoOFD, w)
		}
	}
	if strings.Contains(macNoOFD, "pid and start time") {
		t.Errorf("%q names a start time darwin records do not carry", macNoOFD)
	}
}
