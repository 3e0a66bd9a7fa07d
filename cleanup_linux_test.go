package exactfs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/internal/testfs"
	"golang.org/x/sys/unix"
)

// setAppendOnly sets or clears FS_APPEND_FL on dir: in an append-only
// directory even root can add names but not remove or rename them, which
// makes the cleanup after a commit fail for real.
func setAppendOnly(dir string, on bool) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		return err
	}
	const appendFL = 0x20 // FS_APPEND_FL
	if on {
		flags |= appendFL
	} else {
		flags &^= appendFL
	}
	return unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags))
}

// A write that committed but could not remove what it left under a private
// name must still make the change durable and say what it wrote: the
// outcome is cleanup_pending with a valid identity and the residue's path,
// never a zero identity that reads as "nothing happened".
func TestCleanupFailureAfterCommit(t *testing.T) {
	testfs.RequireRoot(t)
	probe := t.TempDir()
	err := setAppendOnly(probe, true)
	testfs.Require(t, "append-only directories", err == nil, "FS_APPEND_FL on the test directory failed: "+errString(err))
	setAppendOnly(probe, false)

	cases := map[string]func(t *testing.T, p string) (Identity, error){
		"Publish link fallback": func(t *testing.T, p string) (Identity, error) {
			defer setHook(hook.ForceLinkFallback, func(string) {})()
			return Publish(p, []byte("new"), 0o600)
		},
		"ReplaceExpected": func(t *testing.T, p string) (Identity, error) {
			if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
				t.Fatal(err)
			}
			_, want, err := Capture(p)
			if err != nil {
				t.Fatal(err)
			}
			return ReplaceExpected(p, []byte("new"), want)
		},
	}
	for name, write := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f")
			t.Cleanup(func() { setAppendOnly(dir, false) })
			defer setHook(hook.BeforeCleanup, func(string) {
				if err := setAppendOnly(dir, true); err != nil {
					t.Errorf("append-only: %v", err)
				}
			})()
			id, err := write(t, p)
			setAppendOnly(dir, false)
			if !errors.Is(err, ErrCleanupPending) {
				t.Fatalf("want cleanup_pending after a committed write whose cleanup failed, got %v", err)
			}
			var e *Error
			if !errors.As(err, &e) || len(e.Residue) != 1 {
				t.Fatalf("residue not reported: %v", err)
			}
			if _, err := os.Lstat(e.Residue[0]); err != nil {
				t.Fatalf("reported residue %s does not exist: %v", e.Residue[0], err)
			}
			data, have, cerr := Capture(p)
			if cerr != nil || !bytes.Equal(data, []byte("new")) {
				t.Fatalf("the committed bytes are not at the name: %q %v", data, cerr)
			}
			if !id.SameContent(have) {
				t.Fatalf("returned identity is not what was written: %s", id.diff(have))
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
