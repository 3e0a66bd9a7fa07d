package statelock

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/exactfs/exactfs/internal/testfs"
)

// #33: the owner record's write fails, and so does the retraction of the
// record we created in place (the directory turned immutable in between,
// which even root cannot change). Both failures are reported, joined; the
// write's errno stays reachable; nothing but our own empty record is left,
// and it stays for the stale protocol (it is never guessed away here).
func TestOwnerWriteFaultAndRetractionFaultBothReported(t *testing.T) {
	chattr := testfs.RequireCommand(t, "chattr")
	mnt := testfs.LoopExt4(t, 16)
	e := newEnvAt(t, filepath.Join(mnt, "d"), filepath.Join(t.TempDir(), "config"))
	t.Cleanup(closeParked)
	setImmutable := func(on bool) {
		flag := "-i"
		if on {
			flag = "+i"
		}
		if out, err := exec.Command(chattr, flag, e.dir).CombinedOutput(); err != nil {
			t.Fatalf("chattr %s %s: %v: %s", flag, e.dir, err, out)
		}
	}
	t.Cleanup(func() { setImmutable(false) })
	f := faultsFor(e, true, func() error {
		setImmutable(true)
		return syscall.EIO
	})
	faultAt.Store(&f)
	defer faultAt.Store(nil)
	_, err := TryLock(e.state, e.opts()...)
	if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "retraction failed") || !errors.Is(err, syscall.EPERM) {
		t.Fatalf("TryLock: want the write's EIO joined with the retraction's EPERM, got %v", err)
	}
	t.Log(err)
	faultAt.Store(nil)
	setImmutable(false)
	if fi, err := os.Lstat(e.lock); err != nil || fi.Size() != 0 {
		t.Fatalf("our empty record should be left to the stale protocol: %v %v", fi, err)
	}
	assertNoStaging(t, e)
}
