package store

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/sys"
	"golang.org/x/sys/windows"
)

// TestWindowsOwnerOnlyPathCodes: with internal/sys's gate open (only in
// this test: every program keeps it shut), the store's owner-only calls
// read the DACL through exactfs's walk and answer with the store's codes.
// Under Wine, which keeps no DACL and shows one that lets SYSTEM and
// Everyone in: acl_present for Verify, acl_verify_failed for Apply, and
// not_regular_file / not_directory for the wrong kind. On real Windows
// Apply makes the directory owner-only and Verify then accepts it, and a
// file created inside it. Before, every call answered acl_unavailable.
func TestWindowsOwnerOnlyPathCodes(t *testing.T) {
	defer sys.OpenGateForTest()()
	dir := filepath.Join(t.TempDir(), "store")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "data.json")
	if err := os.WriteFile(file, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := VerifyOwnerOnlyPath(file, Directory); CodeOf(err) != exactfs.CodeNotDirectory {
		t.Errorf("VerifyOwnerOnlyPath(file, Directory): %v, want not_directory", err)
	}
	if err := VerifyOwnerOnlyPath(dir, File); CodeOf(err) == "" {
		t.Errorf("VerifyOwnerOnlyPath(dir, File) succeeded")
	}
	if windowsUnderWine() {
		if err := VerifyOwnerOnlyPath(dir, Directory); CodeOf(err) != CodeACLPresent {
			t.Errorf("VerifyOwnerOnlyPath(dir) under Wine: %v, want acl_present", err)
		}
		if err := ApplyOwnerOnlyPath(dir, Directory); CodeOf(err) != CodeACLVerifyFailed {
			t.Errorf("ApplyOwnerOnlyPath(dir) under Wine: %v, want acl_verify_failed", err)
		}
		if err := VerifyOwnerOnlyPath(file, File); CodeOf(err) != CodeACLPresent {
			t.Errorf("VerifyOwnerOnlyPath(file) under Wine: %v, want acl_present", err)
		}
		return
	}
	if err := ApplyOwnerOnlyPath(dir, Directory); err != nil {
		t.Fatalf("ApplyOwnerOnlyPath(dir): %v", err)
	}
	if err := VerifyOwnerOnlyPath(dir, Directory); err != nil {
		t.Fatalf("VerifyOwnerOnlyPath(dir) after Apply: %v", err)
	}
	inside := filepath.Join(dir, "new.json")
	if err := os.WriteFile(inside, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := VerifyOwnerOnlyPath(inside, File); err != nil {
		t.Fatalf("VerifyOwnerOnlyPath of a file created in the owner-only directory: %v", err)
	}
}

// windowsUnderWine reports whether the process runs under Wine, whose
// ntdll exports wine_get_version.
func windowsUnderWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}
