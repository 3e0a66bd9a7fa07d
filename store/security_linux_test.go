package store

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/exactfs/exactfs/internal/testfs"
	"golang.org/x/sys/unix"
)

// addUser creates a throwaway system user and returns its uid.
func addUser(t *testing.T) int {
	t.Helper()
	testfs.RequireRoot(t)
	useradd := testfs.RequireCommand(t, "useradd", "userdel")
	name := "exfs" + strconv.Itoa(os.Getpid()%100000)
	out, err := exec.Command(useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name).CombinedOutput()
	if err != nil && !strings.Contains(string(out), "already exists") {
		t.Fatalf("useradd: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("userdel", name).Run() })
	out, err = exec.Command("id", "-u", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	uid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	return uid
}

func TestOwnerMismatch(t *testing.T) {
	uid := addUser(t)
	root := t.TempDir()
	dir := filepath.Join(root, "d")
	file := filepath.Join(root, "f")
	os.Mkdir(dir, 0o755)
	os.WriteFile(file, []byte("x"), 0o644)
	chmod(t, dir, 0o755)
	chmod(t, file, 0o644)
	for _, c := range []struct {
		path string
		kind Kind
	}{{dir, Directory}, {file, File}} {
		if err := os.Chown(c.path, uid, uid); err != nil {
			t.Fatal(err)
		}
		wantCode(t, VerifyOwnerOnlyPath(c.path, c.kind), CodeOwnerMismatch)
		err := ApplyOwnerOnlyPath(c.path, c.kind)
		wantCode(t, err, CodeOwnerMismatch)
		if !errors.Is(err, ErrOwnerMismatch) {
			t.Fatal("errors.Is ErrOwnerMismatch false")
		}
		// Apply never touches what it does not own.
		fi, _ := os.Lstat(c.path)
		if fi.Mode().Perm() == 0o700 || fi.Mode().Perm() == 0o600 {
			t.Fatalf("%s: apply changed the mode of a file owned by uid %d", c.path, uid)
		}
	}
}

// setfacl runs setfacl, skipping (CI: failing) where the tool or the
// filesystem's ACL support is missing.
func setfacl(t *testing.T, args ...string) {
	t.Helper()
	bin := testfs.RequireCommand(t, "setfacl")
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil && strings.Contains(string(out), "Operation not supported") {
		testfs.Require(t, "a filesystem with POSIX ACLs", false, string(out))
	}
	if err != nil {
		t.Fatalf("setfacl %v: %v: %s", args, err, out)
	}
}

func hasXattr(t *testing.T, p, name string) bool {
	t.Helper()
	_, err := unix.Lgetxattr(p, name, nil)
	if err == nil {
		return true
	}
	if err != unix.ENODATA {
		t.Fatalf("getxattr %s %s: %v", p, name, err)
	}
	return false
}

// The POSIX ACL extended attributes of Linux, which the test inspects with
// getxattr (the proof itself lives in the root package now).
const (
	xattrACLAccess  = "system.posix_acl_access"
	xattrACLDefault = "system.posix_acl_default"
)

func TestACLPresentThenCleared(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "f")
	dir := filepath.Join(root, "d")
	os.WriteFile(file, []byte("x"), 0o600)
	os.Mkdir(dir, 0o700)
	chmod(t, dir, 0o700)

	setfacl(t, "-m", "u:nobody:r", file)
	err := VerifyOwnerOnlyPath(file, File)
	var e *Error
	if !errors.As(err, &e) || (e.Code != CodeACLPresent && e.Code != CodeModeMismatch) {
		t.Fatalf("verify with an access ACL: %v, want acl_present (or mode_mismatch: setfacl widened the mask)", err)
	}
	chmod(t, file, 0o600) // the mask entry now hides the named entry from the mode bits
	if !hasXattr(t, file, xattrACLAccess) {
		t.Fatal("chmod removed the ACL; the test cannot show acl_present")
	}
	err = VerifyOwnerOnlyPath(file, File)
	if !errors.As(err, &e) || e.Code != CodeACLPresent || aclStep(err) != (ACLError{Operation: ACLQuery, Attribute: ACLAccess}) {
		t.Fatalf("verify: %v, want acl_present (query, access)", err)
	}
	if !errors.Is(err, ErrACLPresent) {
		t.Fatal("errors.Is ErrACLPresent false")
	}
	if err := ApplyOwnerOnlyPath(file, File); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if hasXattr(t, file, xattrACLAccess) {
		t.Fatal("apply left the access ACL")
	}
	if err := VerifyOwnerOnlyPath(file, File); err != nil {
		t.Fatalf("verify after apply: %v", err)
	}

	// A default ACL on a directory: every file created in it would inherit
	// it.
	setfacl(t, "-d", "-m", "u:nobody:rwx", dir)
	err = VerifyOwnerOnlyPath(dir, Directory)
	if !errors.As(err, &e) || e.Code != CodeACLPresent || aclStep(err).Attribute != ACLDefault {
		t.Fatalf("verify dir: %v, want acl_present (query, default)", err)
	}
	if err := ApplyOwnerOnlyPath(dir, Directory); err != nil {
		t.Fatalf("apply dir: %v", err)
	}
	if hasXattr(t, dir, xattrACLDefault) || hasXattr(t, dir, xattrACLAccess) {
		t.Fatal("apply left an ACL on the directory")
	}
	if err := VerifyOwnerOnlyPath(dir, Directory); err != nil {
		t.Fatal(err)
	}
}

// A default ACL on a directory of the store would be inherited by every
// file created in it: the store refuses to write there until it is cleared.
func TestStoreRefusesDirectoryWithDefaultACL(t *testing.T) {
	s := newStore(t)
	if err := s.Mkdir("d"); err != nil {
		t.Fatal(err)
	}
	setfacl(t, "-d", "-m", "u:nobody:rwx", filepath.Join(s.Path(), "d"))
	for name, op := range map[string]func() error{
		"publish": func() error { _, err := s.Publish("d/f", []byte("x")); return err },
		"replace": func() error { _, err := s.Replace("d/f", []byte("x")); return err },
		"mkdir":   func() error { return s.Mkdir("d/sub") },
	} {
		err := op()
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeACLPresent || aclStep(err).Attribute != ACLDefault {
			t.Fatalf("%s: %v, want acl_present (default)", name, err)
		}
	}
	if got := entries(t, filepath.Join(s.Path(), "d")); len(got) != 0 {
		t.Fatalf("written despite the ACL: %v", got)
	}
}
