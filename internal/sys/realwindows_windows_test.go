package sys

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Tests of what Wine 8 cannot show: they run on real Windows (NTFS) and
// skip under Wine only, each saying what Wine lacks.

// TestOpenActsOnObjectNotName: RenameOpen and DeleteOpen act on the object
// their handle is open on, after another process (here: Go's os.Rename)
// has moved it and put a successor at its old name. Wine 8 renames and
// deletes through the name a handle was opened with, so there the
// successor would be moved.
func TestOpenActsOnObjectNotName(t *testing.T) {
	skipUnderWine(t, "rename or delete by object (it renames through the name a handle was opened with)")
	dir := t.TempDir()
	fd := dirHandle(t, dir)
	create(t, fd, "f", "original")
	hd, err := OpenHandle(fd, "f", HowDelete|HowNonDir)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(hd)
	if err := os.Rename(filepath.Join(dir, "f"), filepath.Join(dir, "g")); err != nil {
		t.Fatal(err)
	}
	create(t, fd, "f", "successor")
	if err := RenameOpen(hd, fd, "moved"); err != nil {
		t.Fatal(err)
	}
	// Read through handles of this package: they share delete, where
	// os.ReadFile's would fail while hd holds DELETE access.
	if readAt(t, fd, "f") != "successor" || readAt(t, fd, "moved") != "original" {
		t.Fatalf("RenameOpen moved the wrong object: f=%q moved=%q", readAt(t, fd, "f"), readAt(t, fd, "moved"))
	}
	if _, err := Lstat(fd, "g"); err != syscall.ENOENT {
		t.Fatalf("g after RenameOpen: %v, want ENOENT", err)
	}
	if err := os.Rename(filepath.Join(dir, "moved"), filepath.Join(dir, "h")); err != nil {
		t.Fatal(err)
	}
	create(t, fd, "moved", "second successor")
	if err := DeleteOpen(hd); err != nil {
		t.Fatal(err)
	}
	Close(hd)
	if readAt(t, fd, "moved") != "second successor" {
		t.Fatal("DeleteOpen deleted the successor")
	}
	if _, err := Lstat(fd, "h"); err != syscall.ENOENT {
		t.Fatalf("the object DeleteOpen's handle was open on is still there as h: %v", err)
	}
}

// TestPosixDeleteFreesName: with POSIX delete semantics (NTFS, Windows 10
// 1709+) the name of an object deleted by handle is free at once, while
// the handle is still open, so a successor can be created there.
func TestPosixDeleteFreesName(t *testing.T) {
	skipUnderWine(t, "POSIX delete semantics (FileDispositionInformationEx is not implemented)")
	dir := t.TempDir()
	fd := dirHandle(t, dir)
	create(t, fd, "f", "old")
	hd, err := OpenHandle(fd, "f", HowDelete|HowNonDir)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(hd)
	if err := DeleteOpen(hd); err != nil {
		t.Fatal(err)
	}
	if _, err := Lstat(fd, "f"); err != syscall.ENOENT {
		t.Fatalf("f while the deleting handle is open: %v, want ENOENT", err)
	}
	create(t, fd, "f", "new")
	Close(hd)
	if content(t, dir, "f") != "new" {
		t.Fatal("the successor did not survive the close of the deleting handle")
	}
}

// TestRenameReplaceOverOpenTarget: Rename replaces a target that a reader
// holds open (sharing delete, as every handle of this package and of
// Node's libuv does), with POSIX semantics, and the reader keeps reading
// the old bytes. Under Wine the POSIX class is missing and the legacy
// fallback refuses with EACCES while the target is open: that fallback is
// what runs on FAT and old Windows, and the callers retry it.
func TestRenameReplaceOverOpenTarget(t *testing.T) {
	dir := t.TempDir()
	fd := dirHandle(t, dir)
	create(t, fd, "target", "old")
	create(t, fd, "staged", "new")
	r, err := Open(fd, "target", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(r)
	defer func(was time.Duration) { ReplaceWait = was }(ReplaceWait)
	ReplaceWait = 100 * time.Millisecond
	err = Rename(fd, "staged", fd, "target")
	if underWine() {
		// The legacy replace refuses while the reader is open; Rename
		// waits ReplaceWait for it and then says busy.
		wantErr(t, "legacy replace over an open target (Wine)", err, syscall.EBUSY)
		if content(t, dir, "target") != "old" || content(t, dir, "staged") != "new" {
			t.Fatal("the refused replace changed something")
		}
		return
	}
	if err != nil {
		t.Fatalf("POSIX replace over an open target: %v", err)
	}
	if content(t, dir, "target") != "new" {
		t.Fatal("target does not hold the new bytes")
	}
	buf := make([]byte, 8)
	if n, err := Pread(r, buf, 0); err != nil || string(buf[:n]) != "old" {
		t.Fatalf("the reader of the replaced file reads %q, %v; want old", buf[:n], err)
	}
}

// TestReparsePointsRefused: a junction (a directory reparse point any user
// may create) is never followed: OpenDir and OpenDirNoSymlinks refuse it
// with ELOOP, Lstat and the listing show it as a symlink with its tag,
// Open of the junction itself fails, and Rmdir removes the junction, not
// its target. Wine 8 cannot make reparse points.
func TestReparsePointsRefused(t *testing.T) {
	skipUnderWine(t, "reparse points (no junctions or symlinks can be created)")
	dir := t.TempDir()
	fd := dirHandle(t, dir)
	if err := Mkdir(fd, "target", 0o700); err != nil {
		t.Fatal(err)
	}
	create(t, fd, `target\inside`, "kept")
	makeJunction(t, filepath.Join(dir, "j"), filepath.Join(dir, "target"))

	_, err := OpenDir(fd, "j")
	wantErr(t, "OpenDir of a junction", err, syscall.ELOOP)
	_, err = OpenDirNoSymlinks(fd, "j")
	wantErr(t, "OpenDirNoSymlinks of a junction", err, syscall.ELOOP)
	_, err = OpenDirNoSymlinks(AtCWD, filepath.Join(dir, "j", "deeper"))
	wantErr(t, "OpenDirNoSymlinks through a junction", err, syscall.ELOOP)
	st, err := Lstat(fd, "j")
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode&os.ModeSymlink == 0 || st.ReparseTag != windows.IO_REPARSE_TAG_MOUNT_POINT {
		t.Fatalf("Lstat(junction) = %+v, want a symlink mode and the mount-point tag", st)
	}
	tst, _ := Lstat(fd, "target")
	if st.Ino == tst.Ino {
		t.Fatal("Lstat of the junction gave its target's identity")
	}
	ents, err := ReadDirEntries(fd)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name == "j" && e.Mode&os.ModeSymlink == 0 {
			t.Fatalf("the listing shows the junction as %v", e.Mode)
		}
	}
	if err := Rmdir(fd, "j"); err != nil {
		t.Fatal(err)
	}
	if content(t, dir, `target\inside`) != "kept" {
		t.Fatal("removing the junction touched its target")
	}

	// A file symlink, where the user may create one (Developer Mode or the
	// privilege); otherwise that part is skipped with the reason.
	create(t, fd, "file", "bytes")
	link, _ := windows.UTF16PtrFromString(filepath.Join(dir, "sl"))
	tgt, _ := windows.UTF16PtrFromString(filepath.Join(dir, "file"))
	err = windows.CreateSymbolicLink(link, tgt, 0x2 /* SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE */)
	if errors.Is(err, windows.ERROR_PRIVILEGE_NOT_HELD) {
		t.Skip("file symlink part: this user may not create symlinks (no Developer Mode, no privilege)")
	}
	if err != nil {
		t.Fatal(err)
	}
	sl, err := Open(fd, "sl", os.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("Open of a file symlink: %v (it opens the link itself)", err)
	}
	defer Close(sl)
	if s, _ := Fstat(sl); s.Mode&os.ModeSymlink == 0 || s.ReparseTag != windows.IO_REPARSE_TAG_SYMLINK {
		t.Fatalf("Fstat of the handle on a symlink = %+v, want the link itself", s)
	}
	if err := Unlink(fd, "sl"); err != nil {
		t.Fatal(err)
	}
	if content(t, dir, "file") != "bytes" {
		t.Fatal("unlinking the symlink touched its target")
	}
}

// makeJunction makes the directory link a junction to target, an absolute
// path (FSCTL_SET_REPARSE_POINT with a mount-point reparse buffer).
func makeJunction(t *testing.T, link, target string) {
	t.Helper()
	if err := os.Mkdir(link, 0o755); err != nil {
		t.Fatal(err)
	}
	p, _ := windows.UTF16PtrFromString(link)
	jh, err := windows.CreateFile(p, windows.GENERIC_WRITE, 0, nil, windows.OPEN_EXISTING,
		windows.FILE_FLAG_OPEN_REPARSE_POINT|windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(jh)
	sub, _ := windows.UTF16FromString(`\??\` + target) // with its NUL
	prn, _ := windows.UTF16FromString(target)
	// REPARSE_DATA_BUFFER, MountPointReparseBuffer: tag, data length,
	// reserved, then four USHORT offsets and lengths (in bytes) of the
	// substitute and print names in the path buffer that follows.
	path := append(sub, prn...)
	dataLen := 8 + 2*len(path)
	buf := make([]byte, 8+dataLen)
	put16 := func(off, v int) { buf[off], buf[off+1] = byte(v), byte(v>>8) }
	put32 := func(off int, v uint32) {
		put16(off, int(v&0xffff))
		put16(off+2, int(v>>16))
	}
	put32(0, windows.IO_REPARSE_TAG_MOUNT_POINT)
	put16(4, dataLen)
	put16(8, 0)               // substitute name offset
	put16(10, 2*(len(sub)-1)) // its length, without the NUL
	put16(12, 2*len(sub))     // print name offset
	put16(14, 2*(len(prn)-1)) // its length
	copy(unsafe.Slice((*uint16)(unsafe.Pointer(&buf[16])), len(path)), path)
	var n uint32
	if err := windows.DeviceIoControl(jh, windows.FSCTL_SET_REPARSE_POINT, &buf[0], uint32(len(buf)), nil, 0, &n, nil); err != nil {
		t.Fatalf("making the junction %s: %v", link, err)
	}
}

// readAt reads name beneath dirfd through a handle that shares delete.
func readAt(t *testing.T, dirfd int, name string) string {
	t.Helper()
	fd, err := Open(dirfd, name, os.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	defer Close(fd)
	buf := make([]byte, 256)
	n, err := Pread(fd, buf, 0)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return string(buf[:n])
}
