package sys

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// WindowsFacts is what `exactfs doctor` reports about the volume holding a
// directory on Windows: what the volume says of itself, and what two
// probes in a private temporary directory there showed.
type WindowsFacts struct {
	Volume     string // the volume's root as Win32 resolves the path ("C:\")
	FSName     string // "NTFS", "ReFS", "FAT32", "exFAT", ...
	ACLs       bool   // FILE_PERSISTENT_ACLS: the volume keeps security descriptors
	HardLinks  bool   // FILE_SUPPORTS_HARD_LINKS
	Reparse    bool   // FILE_SUPPORTS_REPARSE_POINTS (symlinks, junctions)
	PosixNames bool   // FILE_SUPPORTS_POSIX_UNLINK_RENAME: POSIX delete and rename
	// DACL is nil when an owner-only DACL written to the probe directory
	// read back as written (MakeOwnerOnly's own proof), else why not.
	DACL error
	// Lock is nil when a LockFileEx range held through one handle refused
	// another handle of the same file (ERROR_LOCK_VIOLATION) and was
	// granted to it once unlocked, else why not.
	Lock error
}

// fileSupportsPosixUnlinkRename is FILE_SUPPORTS_POSIX_UNLINK_RENAME
// (Windows 10 1709 and later, NTFS), which x/sys/windows does not name.
const fileSupportsPosixUnlinkRename = 0x00000400

// ProbeWindows gathers WindowsFacts for dir. It is the one call of this
// package that works with the gate shut, because it decides nothing and
// touches nothing of the user's: the volume is read by path (Win32
// resolves it, links included: the answer is a report, never a proof),
// and the probes run in a directory it creates under dir with a private
// name and removes before it returns. An error means the volume could not
// be read or the probe directory could not be made or removed.
func ProbeWindows(dir string) (WindowsFacts, error) {
	var f WindowsFacts
	abs, err := filepath.Abs(dir)
	if err != nil {
		return f, err
	}
	p16, err := windows.UTF16PtrFromString(abs)
	if err != nil {
		return f, err
	}
	vol := make([]uint16, windows.MAX_PATH+1)
	if err := windows.GetVolumePathName(p16, &vol[0], uint32(len(vol))); err != nil {
		return f, fmt.Errorf("finding the volume of %s: %w", abs, err)
	}
	name := make([]uint16, windows.MAX_PATH+1)
	var flags uint32
	if err := windows.GetVolumeInformation(&vol[0], nil, 0, nil, nil, &flags, &name[0], uint32(len(name))); err != nil {
		return f, fmt.Errorf("reading the volume information of %s: %w", windows.UTF16ToString(vol), err)
	}
	f.Volume = windows.UTF16ToString(vol)
	f.FSName = windows.UTF16ToString(name)
	f.ACLs = flags&windows.FILE_PERSISTENT_ACLS != 0
	f.HardLinks = flags&windows.FILE_SUPPORTS_HARD_LINKS != 0
	f.Reparse = flags&windows.FILE_SUPPORTS_REPARSE_POINTS != 0
	f.PosixNames = flags&fileSupportsPosixUnlinkRename != 0

	tmp, err := os.MkdirTemp(abs, ".exactfs-doctor-")
	if err != nil {
		return f, fmt.Errorf("making a probe directory in %s: %w", abs, err)
	}
	f.DACL = probeDACL(tmp)
	f.Lock = probeLock(filepath.Join(tmp, "lock"))
	// Not os.RemoveAll: Wine 8 refuses its first delete call. What is
	// left is named, so the user can remove it.
	if err := os.Remove(filepath.Join(tmp, "lock")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return f, fmt.Errorf("removing the probe file (remove %s by hand): %w", tmp, err)
	}
	if err := os.Remove(tmp); err != nil {
		return f, fmt.Errorf("removing the probe directory (remove %s by hand): %w", tmp, err)
	}
	return f, nil
}

// probeDACL makes the probe directory owner-only and proves it, as the
// store does (makeOwnerOnly reads the descriptor back).
func probeDACL(dir string) error {
	p16, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return err
	}
	dh, err := windows.CreateFile(p16, windows.READ_CONTROL|windows.FILE_READ_ATTRIBUTES,
		shareAll, nil, windows.OPEN_EXISTING, windows.FILE_FLAG_BACKUP_SEMANTICS|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(dh)
	return makeOwnerOnly(int(dh), true)
}

// probeLock creates path and locks one byte of it beyond its end, where
// statelock locks, through a first handle; a second handle must be
// refused and then, once the first unlocks, granted.
func probeLock(path string) error {
	p16, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return err
	}
	open := func(disposition uint32) (windows.Handle, error) {
		return windows.CreateFile(p16, windows.GENERIC_READ|windows.GENERIC_WRITE, shareAll, nil, disposition, 0, 0)
	}
	a, err := open(windows.CREATE_NEW)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(a)
	b, err := open(windows.OPEN_EXISTING)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(b)
	const at, n = 1 << 40, 1
	excl := uint32(windows.LOCKFILE_EXCLUSIVE_LOCK | windows.LOCKFILE_FAIL_IMMEDIATELY)
	if err := lockFile(int(a), excl, at, n); err != nil {
		return fmt.Errorf("LockFileEx on a first handle: %w", err)
	}
	switch err := lockFile(int(b), excl, at, n); err {
	case nil:
		return errors.New("LockFileEx granted a range already held through another handle")
	case windows.ERROR_LOCK_VIOLATION, windows.ERROR_IO_PENDING:
	default:
		return fmt.Errorf("LockFileEx on a second handle, while the first held the range: %w", err)
	}
	ov, lo, hi, err := lockRange(at, n)
	if err != nil {
		return err
	}
	if err := windows.UnlockFileEx(a, 0, lo, hi, &ov); err != nil {
		return fmt.Errorf("UnlockFileEx: %w", err)
	}
	if err := lockFile(int(b), excl, at, n); err != nil {
		return fmt.Errorf("LockFileEx on a second handle after the first unlocked: %w", err)
	}
	return nil
}

// GateOpen reports whether this process may use the Windows primitives
// (see ready): in a program, only when its user opted in (OptInEnv).
func GateOpen() bool { return ready }

// GateState is GateOpen and why, in words: whether the opt-in was set,
// to what, or that a test binary changed the gate.
func GateState() (open bool, why string) { return ready, gateWhy }
