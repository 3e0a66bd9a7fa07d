package exactfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/exactfs/exactfs/internal/sys"
	"golang.org/x/sys/windows"
)

// underWine reports whether the process runs under Wine, whose ntdll
// exports wine_get_version and Windows' does not.
func underWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}

func withOpen(t *testing.T, path string, f func(*os.File) error) error {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	return f(fh)
}

// TestWindowsOwnerOnlyGateShut: with internal/sys's gate shut (every
// program today) both refuse with acl_unavailable, saying why.
func TestWindowsOwnerOnlyGateShut(t *testing.T) {
	defer sys.CloseGateForTest()()
	p := filepath.Join(t.TempDir(), "f")
	mustWrite(t, p, "x")
	for name, f := range map[string]func(*os.File) error{"Apply": ApplyOwnerOnly, "Verify": VerifyOwnerOnly} {
		err := withOpen(t, p, f)
		if CodeOf(err) != CodeACLUnavailable || !strings.Contains(err.Error(), "fails closed") {
			t.Errorf("%sOwnerOnly with the gate shut: %v, want acl_unavailable", name, err)
		}
	}
}

// TestWindowsOwnerOnly: the store's owner-only policy on Windows is the
// DACL (owneronly_windows.go). Under Wine, which keeps no DACL and
// synthesizes one that lets SYSTEM and Everyone in, Verify refuses with
// acl_present naming the entry, and Apply with acl_verify_failed (it
// wrote the DACL and read back something else); on real Windows Apply
// makes a directory and a file owner-only, Verify accepts them and a file
// created inside the directory (through the entry it inherits), and an
// object of another owner is refused, never adopted. Before, both refused
// with acl_unavailable everywhere.
func TestWindowsOwnerOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "data.json")
	mustWrite(t, file, "{}")
	if underWine() {
		for _, p := range []string{dir, file} {
			err := withOpen(t, p, VerifyOwnerOnly)
			t.Logf("Verify under Wine: %v", err)
			if CodeOf(err) != CodeACLPresent || !strings.Contains(err.Error(), "is not owner-only") {
				t.Errorf("VerifyOwnerOnly(%s) under Wine: %v, want acl_present", p, err)
			}
			err = withOpen(t, p, ApplyOwnerOnly)
			t.Logf("Apply under Wine: %v", err)
			if CodeOf(err) != CodeACLVerifyFailed || !strings.Contains(err.Error(), "did not keep it") {
				t.Errorf("ApplyOwnerOnly(%s) under Wine: %v, want acl_verify_failed", p, err)
			}
			var acl *ACLError
			if !errors.As(err, &acl) || acl.Operation == "" || acl.Attribute == "" {
				t.Errorf("ApplyOwnerOnly(%s): no ACL operation and attribute in %v", p, err)
			}
		}
		if b, err := os.ReadFile(file); err != nil || string(b) != "{}" {
			t.Fatalf("the file changed: %q %v", b, err)
		}
		return
	}
	if err := withOpen(t, dir, ApplyOwnerOnly); err != nil {
		t.Fatalf("ApplyOwnerOnly(dir): %v", err)
	}
	if err := withOpen(t, dir, VerifyOwnerOnly); err != nil {
		t.Fatalf("VerifyOwnerOnly(dir) after Apply: %v", err)
	}
	inside := filepath.Join(dir, "new.json")
	mustWrite(t, inside, "{}")
	if err := withOpen(t, inside, VerifyOwnerOnly); err != nil {
		t.Fatalf("VerifyOwnerOnly of a file created in the owner-only directory: %v", err)
	}
	if err := withOpen(t, file, ApplyOwnerOnly); err != nil {
		t.Fatalf("ApplyOwnerOnly(file): %v", err)
	}
	if err := withOpen(t, file, VerifyOwnerOnly); err != nil {
		t.Fatalf("VerifyOwnerOnly(file) after Apply: %v", err)
	}
	// Another owner's file (the system's): refused, never adopted.
	hosts := filepath.Join(os.Getenv("SystemRoot"), "System32", "drivers", "etc", "hosts")
	for name, f := range map[string]func(*os.File) error{"Apply": ApplyOwnerOnly, "Verify": VerifyOwnerOnly} {
		if err := withOpen(t, hosts, f); CodeOf(err) != CodeOwnerMismatch {
			t.Errorf("%sOwnerOnly(%s): %v, want owner_mismatch", name, hosts, err)
		}
	}
}

// TestWindowsOwnerOnlyRefusesOtherObjects: a device is neither a file nor
// a directory: not_regular_file, before any DACL is read.
func TestWindowsOwnerOnlyRefusesOtherObjects(t *testing.T) {
	err := withOpen(t, "NUL", VerifyOwnerOnly)
	if CodeOf(err) != CodeNotRegularFile || !strings.Contains(err.Error(), "character device") {
		t.Fatalf("VerifyOwnerOnly(NUL): %v, want not_regular_file", err)
	}
}
