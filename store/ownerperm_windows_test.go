package store

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/sys"
)

// TestWindowsOwnerOnlyRecordIsTheDACL: on Windows the store's "is this
// record still owner-only" (ReplaceExpected before it hands a file's
// security on, a lease's fencing check) is the DACL, read through a handle
// of the file, never the mode, which reads 0666 for every writable file.
// The mode given is ignored both ways: 0600 does not make a file
// owner-only, 0666 does not make it exposed. Under Wine, which keeps no
// DACL, the answer is the DACL check's refusal (acl_present); on real
// Windows a file created in an owner-only directory is accepted, which the
// old check (mode 0600 or mode_mismatch) refused.
func TestWindowsOwnerOnlyRecordIsTheDACL(t *testing.T) {
	defer sys.OpenGateForTest()()
	dir := filepath.Join(t.TempDir(), "store")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	wine := windowsUnderWine()
	if !wine {
		if err := ApplyOwnerOnlyPath(dir, Directory); err != nil {
			t.Fatalf("ApplyOwnerOnlyPath(dir): %v", err)
		}
	}
	file := filepath.Join(dir, "data.json")
	if err := os.WriteFile(file, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() == 0o600 {
		t.Fatalf("the file's mode reads %v: the premise (Windows shows no owner-only mode) does not hold", fi.Mode().Perm())
	}
	opens := 0
	open := func() (*os.File, func(), error) {
		opens++
		f, err := exactfs.OpenFile(file, os.O_RDONLY, 0)
		if err != nil {
			return nil, nil, err
		}
		return f, func() { f.Close() }, nil
	}
	for _, mode := range []fs.FileMode{fi.Mode(), 0o600} {
		ok, why := ownerOnlyRecord(mode, open)
		t.Logf("mode %v: owner-only %v (%v)", mode.Perm(), ok, why)
		if wine {
			if ok || CodeOf(why) != CodeACLPresent {
				t.Errorf("mode %v under Wine: owner-only %v, %v; want refused with acl_present (the DACL's answer)", mode.Perm(), ok, why)
			}
		} else if !ok {
			t.Errorf("mode %v: a file created in an owner-only directory was refused: %v", mode.Perm(), why)
		}
	}
	if opens != 2 {
		t.Errorf("the file was opened %d times for 2 answers: the DACL was not read each time", opens)
	}
}
