package store

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// macChmod runs macOS's chmod, whose +a adds an ACL entry (chmod(1)).
func macChmod(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("/bin/chmod", args...).CombinedOutput(); err != nil {
		t.Fatalf("chmod %v: %v: %s", args, err, out)
	}
}

// macACLLines lists the ACL entries ls -led prints for p (" 0: ...").
func macACLLines(t *testing.T, p string) []string {
	t.Helper()
	out, err := exec.Command("/bin/ls", "-led", p).Output()
	if err != nil {
		t.Fatalf("ls -led %s: %v", p, err)
	}
	var acl []string
	for _, l := range strings.Split(string(out), "\n")[1:] {
		if strings.TrimSpace(l) != "" {
			acl = append(acl, strings.TrimSpace(l))
		}
	}
	return acl
}

// On a Mac, as any user: an extended ACL on a file or a directory makes
// Verify fail with acl_present, and Apply removes it (ls -le agrees),
// inherited entries included. Before fgetattrlist/fsetattrlist, both failed
// with acl_denied for every caller.
func TestMacACLPresentThenCleared(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "f")
	dir := filepath.Join(root, "d")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		kind Kind
		ace  string
	}{
		{file, File, "everyone allow read"},
		{dir, Directory, "everyone allow list,add_file,search,file_inherit,directory_inherit"},
	} {
		if err := VerifyOwnerOnlyPath(c.path, c.kind); err != nil {
			t.Fatalf("%s without an ACL: %v", c.path, err)
		}
		macChmod(t, "+a", c.ace, c.path)
		if len(macACLLines(t, c.path)) == 0 {
			t.Fatalf("chmod +a left no ACL on %s", c.path)
		}
		err := VerifyOwnerOnlyPath(c.path, c.kind)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeACLPresent || aclStep(err).Operation != ACLQuery {
			t.Fatalf("%s with an ACL: %v, want acl_present (query)", c.path, err)
		}
		if err := ApplyOwnerOnlyPath(c.path, c.kind); err != nil {
			t.Fatalf("apply on %s: %v", c.path, err)
		}
		if got := macACLLines(t, c.path); len(got) != 0 {
			t.Fatalf("ACL still on %s after apply: %q", c.path, got)
		}
		if err := VerifyOwnerOnlyPath(c.path, c.kind); err != nil {
			t.Fatalf("verify after apply on %s: %v", c.path, err)
		}
	}
	// Nothing is inherited any more.
	child := filepath.Join(dir, "child")
	if err := os.WriteFile(child, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := VerifyOwnerOnlyPath(child, File); err != nil {
		t.Fatalf("a file created after apply: %v", err)
	}
}

// A store refuses a directory that would hand an inherited ACL to every
// file created in it.
func TestMacStoreRefusesDirectoryWithInheritedACL(t *testing.T) {
	s := newStore(t)
	if err := s.Mkdir("d"); err != nil {
		t.Fatal(err)
	}
	macChmod(t, "+a", "everyone allow read,file_inherit", filepath.Join(s.Path(), "d"))
	_, err := s.Publish("d/f", []byte("x"))
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeACLPresent {
		t.Fatalf("publish under an inheritable ACL: %v, want acl_present", err)
	}
	if got := entries(t, filepath.Join(s.Path(), "d")); len(got) != 0 {
		t.Fatalf("written despite the ACL: %v", got)
	}
}
