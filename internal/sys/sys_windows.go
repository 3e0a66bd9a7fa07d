package sys

import (
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// ready is the one switch between the Windows primitives of this package
// and everything above it. While it is false every exported function
// fails with ErrUnsupported (the lock probes answer "unknown"), exactly as
// before the primitives existed, so exactfs and every package on it fail
// closed on Windows, and the refusal names the opt-in (unsupportedText).
//
// Every layer is now built on Windows and proven by its own tests under
// Wine 8 (the primitives here, the root's path rules and exact
// primitives, liveness, statelock with its LockFileEx attestation and
// reclaim guard, the store's DACLs, the CLI's Job object: each test binary
// opens the gate for itself with OpenGateForTest). What Wine cannot show
// (reparse points, POSIX delete and rename, DACLs kept on disk,
// durability) has tests that run on real Windows only, and no real
// Windows machine has run them. So a program opens the gate only when its
// user says, in so many words, that they accept that: the environment
// variable OptInEnv set to exactly OptInValue, read once when the process
// starts (gateFromEnv). Anything else keeps it shut; gateWhy says which.
var ready, gateWhy = gateFromEnv(os.LookupEnv)

// AtCWD names the current working directory as a directory descriptor. It
// is no handle value Windows hands out (those are positive multiples of 4).
const AtCWD = -100

// Stat is the part of a stat result exactfs uses. On Windows every field
// comes from a handle: Dev is the 64-bit volume serial number and Ino the
// low half of the 128-bit file id (FILE_ID_INFO); IDHigh is its high half,
// zero on NTFS, and Fstat refuses a file whose IDHigh is not zero (ReFS)
// with ErrUnsupported rather than fold two ids into one. Mode holds the
// type bits (any reparse point, whatever its tag, is fs.ModeSymlink, so
// it is refused as a symlink is) and synthetic permission bits, as Go's
// os.Stat makes them (0o666 or 0o777, without write bits for a read-only
// file): permissions on Windows are the DACL, which Stat does not read.
type Stat struct {
	Dev, Ino, Nlink uint64
	Size            int64
	MtimeNs         int64 // LastWriteTime
	CtimeNs         int64 // ChangeTime
	Mode            fs.FileMode
	Uid, Gid        uint32 // always 0

	IDHigh        uint64 // the high half of the 128-bit file id
	Attributes    uint32 // FILE_ATTRIBUTE_*
	ReparseTag    uint32 // IO_REPARSE_TAG_* when Attributes has REPARSE_POINT
	DeletePending bool   // a delete waits for the last handle to close
}

func h(fd int) windows.Handle { return windows.Handle(fd) }

// Open opens the non-directory name relative to dirfd, never following a
// reparse point at name (the handle is on the link itself; Fstat shows it
// as fs.ModeSymlink). flag uses the os.O_* constants: O_RDONLY, O_WRONLY,
// O_RDWR, O_CREATE, O_EXCL (create-new: fails with EEXIST on any object
// at the name, a link or a directory included, and case-insensitively),
// O_TRUNC, O_APPEND, O_SYNC (write-through); the others have no meaning
// here. A directory at name fails with EISDIR (use OpenDir). perm only
// decides the read-only attribute of a created file (no 0o200 bit: read
// only): the DACL is inherited from the directory. The handle shares
// read, write and delete, so it never blocks another process's rename or
// delete, and it is not inherited by child processes.
func Open(dirfd int, name string, flag int, perm uint32) (int, error) {
	if !ready {
		return -1, ErrUnsupported
	}
	return open(dirfd, name, flag, perm)
}

func open(dirfd int, name string, flag int, perm uint32) (int, error) {
	var access uint32
	switch flag & (syscall.O_RDONLY | syscall.O_WRONLY | syscall.O_RDWR) {
	case syscall.O_RDONLY:
		access = windows.FILE_GENERIC_READ
	case syscall.O_WRONLY:
		access = windows.FILE_GENERIC_WRITE | windows.FILE_READ_ATTRIBUTES
	case syscall.O_RDWR:
		access = windows.FILE_GENERIC_READ | windows.FILE_GENERIC_WRITE
	default:
		return -1, syscall.EINVAL
	}
	if flag&syscall.O_APPEND != 0 {
		// Without FILE_WRITE_DATA every write goes to the end.
		access = access&^windows.FILE_WRITE_DATA | windows.FILE_APPEND_DATA
	}
	disposition := uint32(windows.FILE_OPEN)
	switch {
	case flag&syscall.O_CREAT != 0 && flag&syscall.O_EXCL != 0:
		disposition = windows.FILE_CREATE
	case flag&syscall.O_CREAT != 0:
		disposition = windows.FILE_OPEN_IF
	}
	attrs := uint32(windows.FILE_ATTRIBUTE_NORMAL)
	if perm&0o200 == 0 {
		attrs = windows.FILE_ATTRIBUTE_READONLY
	}
	options := uint32(windows.FILE_NON_DIRECTORY_FILE)
	if flag&syscall.O_SYNC != 0 {
		options |= windows.FILE_WRITE_THROUGH
	}
	fh, err := openAt(dirfd, name, access, attrs, shareAll, disposition, options)
	if err != nil {
		return -1, err
	}
	if flag&syscall.O_TRUNC != 0 && disposition != windows.FILE_CREATE {
		// After the open, not FILE_OVERWRITE: that would also reset the
		// file's attributes and drop its streams, which O_TRUNC does not.
		if err := windows.Ftruncate(fh, 0); err != nil {
			windows.CloseHandle(fh)
			return -1, errnoOf(err)
		}
	}
	return int(fh), nil
}

// OpenDir opens the directory name relative to dirfd without following a
// reparse point at name: a junction or a directory symlink there is not a
// directory to this call, and fails with ELOOP. "." opens dirfd's own
// directory again (a new handle on the same object).
func OpenDir(dirfd int, name string) (int, error) {
	if !ready {
		return -1, ErrUnsupported
	}
	return openDir(dirfd, name)
}

func openDir(dirfd int, name string) (int, error) {
	dh, err := openAt(dirfd, name, dirAccess, 0, shareAll, windows.FILE_OPEN, windows.FILE_DIRECTORY_FILE)
	if err != nil {
		return -1, err
	}
	if err := refuseReparse(dh); err != nil {
		windows.CloseHandle(dh)
		return -1, err
	}
	return int(dh), nil
}

// refuseReparse fails with ELOOP when h is open on a reparse point: the
// open did not follow it, but a caller asking for a directory must not
// get the link instead.
func refuseReparse(fh windows.Handle) error {
	var ti fileAttributeTagInfo
	if err := queryInfo(fh, fileAttributeTagInformation, unsafe.Pointer(&ti), unsafe.Sizeof(ti)); err != nil {
		return err
	}
	if ti.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0 {
		return syscall.ELOOP
	}
	return nil
}

// OpenDirNoSymlinks opens the directory at path beneath dirfd (or at the
// absolute path, from its volume's root) one component at a time, each
// opened without following a reparse point and refused with ELOOP if it is
// one: no component, the last included, may be a symlink or junction.
// The drive letter or UNC share of an absolute path is resolved by the
// system, as a trusted link is. ".." components fail with EINVAL.
func OpenDirNoSymlinks(dirfd int, path string) (int, error) {
	if !ready {
		return -1, ErrUnsupported
	}
	return openDirNoSymlinks(dirfd, path)
}

func openDirNoSymlinks(dirfd int, path string) (int, error) {
	var comps []string
	var start int
	if nt, abs, err := absNTName(path); abs {
		if err != nil {
			return -1, err
		}
		// Open the volume's root, "\??\C:\" or "\??\UNC\server\share\",
		// through the system's links (the drive letter, the redirector),
		// and walk the rest.
		var root string
		if rest, ok := strings.CutPrefix(nt, `\??\UNC\`); ok {
			parts := splitNT(rest)
			if len(parts) < 2 {
				return -1, syscall.EINVAL
			}
			root, comps = `\??\UNC\`+parts[0]+`\`+parts[1]+`\`, parts[2:]
		} else {
			root, comps = nt[:len(`\??\C:\`)], splitNT(nt[len(`\??\C:\`):])
		}
		rh, err := ntCreate(0, root, dirAccess, 0, shareAll, windows.FILE_OPEN, windows.FILE_DIRECTORY_FILE)
		if err != nil {
			return -1, err
		}
		start = int(rh)
	} else {
		fd, err := openDir(dirfd, ".")
		if err != nil {
			return -1, err
		}
		start = fd
		comps = splitNT(path)
	}
	cur := start
	for _, c := range comps {
		if c == "." {
			continue
		}
		next, err := openDir(cur, c)
		windows.CloseHandle(h(cur))
		if err != nil {
			return -1, err
		}
		cur = next
	}
	return cur, nil
}

// splitNT splits a relative path at "/" and "\" and drops empty components.
func splitNT(p string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' || p[i] == '\\' {
			if i > start {
				out = append(out, p[start:i])
			}
			start = i + 1
		}
	}
	return out
}

// Close closes fd.
func Close(fd int) error {
	if !ready {
		return ErrUnsupported
	}
	return errnoOf(windows.CloseHandle(h(fd)))
}

// Dup duplicates fd (DuplicateHandle, same access, not inheritable). The
// copy shares the original's file object: its position and its byte-range
// locks.
func Dup(fd int) (int, error) {
	if !ready {
		return -1, ErrUnsupported
	}
	return dup(fd)
}

func dup(fd int) (int, error) {
	p := windows.CurrentProcess()
	var nh windows.Handle
	if err := windows.DuplicateHandle(p, h(fd), p, &nh, 0, false, windows.DUPLICATE_SAME_ACCESS); err != nil {
		return -1, errnoOf(err)
	}
	return int(nh), nil
}

// Fstat stats an open handle: identity, link count, size, times and type
// all from the handle, never from a name.
func Fstat(fd int) (Stat, error) {
	if !ready {
		return Stat{}, ErrUnsupported
	}
	return fstat(fd)
}

// filetimeNs converts 100 ns units since 1601 to ns since 1970.
func filetimeNs(t int64) int64 { return (t - 116444736000000000) * 100 }

func fstat(fd int) (Stat, error) {
	t, err := windows.GetFileType(h(fd))
	if err != nil {
		return Stat{}, errnoOf(err)
	}
	switch t {
	case windows.FILE_TYPE_DISK:
	case windows.FILE_TYPE_CHAR:
		return Stat{Mode: fs.ModeDevice | fs.ModeCharDevice}, nil
	case windows.FILE_TYPE_PIPE:
		return Stat{Mode: fs.ModeNamedPipe}, nil
	default:
		return Stat{Mode: fs.ModeIrregular}, nil
	}
	var id fileIDInfo
	if err := queryInfo(h(fd), fileIDInformation, unsafe.Pointer(&id), unsafe.Sizeof(id)); err != nil {
		return Stat{}, err
	}
	var std fileStandardInfo
	if err := queryInfo(h(fd), fileStandardInformation, unsafe.Pointer(&std), unsafe.Sizeof(std)); err != nil {
		return Stat{}, err
	}
	var basic fileBasicInfo
	if err := queryInfo(h(fd), windows.FileBasicInformation, unsafe.Pointer(&basic), unsafe.Sizeof(basic)); err != nil {
		return Stat{}, err
	}
	st := Stat{
		Dev:           id.VolumeSerialNumber,
		Ino:           le64(id.FileID[:8]),
		IDHigh:        le64(id.FileID[8:]),
		Nlink:         uint64(std.NumberOfLinks),
		Size:          std.EndOfFile,
		MtimeNs:       filetimeNs(basic.LastWriteTime),
		CtimeNs:       filetimeNs(basic.ChangeTime),
		Attributes:    basic.FileAttributes,
		DeletePending: std.DeletePending != 0,
	}
	switch {
	case basic.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0:
		var ti fileAttributeTagInfo
		if err := queryInfo(h(fd), fileAttributeTagInformation, unsafe.Pointer(&ti), unsafe.Sizeof(ti)); err != nil {
			return Stat{}, err
		}
		st.ReparseTag = ti.ReparseTag
		st.Mode = fs.ModeSymlink | 0o777
	case basic.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY != 0 || std.Directory != 0:
		st.Mode = fs.ModeDir | 0o777
	default:
		st.Mode = 0o666
	}
	if basic.FileAttributes&windows.FILE_ATTRIBUTE_READONLY != 0 {
		st.Mode &^= 0o222
	}
	if st.IDHigh != 0 {
		// A 128-bit file id (ReFS) does not fit the identity exactfs keeps;
		// refuse rather than compare half of it.
		return st, ErrUnsupported
	}
	return st, nil
}

func le64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// Lstat stats name relative to dirfd without following a reparse point at
// name. It opens a handle with attribute access only, which takes part in
// no share-mode check, so it neither fails on nor disturbs other handles.
func Lstat(dirfd int, name string) (Stat, error) {
	if !ready {
		return Stat{}, ErrUnsupported
	}
	return lstat(dirfd, name)
}

func lstat(dirfd int, name string) (Stat, error) {
	fh, err := openAt(dirfd, name, statAccess, 0, shareAll, windows.FILE_OPEN, 0)
	if err != nil {
		return Stat{}, err
	}
	defer windows.CloseHandle(fh)
	return fstat(int(fh))
}

// Pread reads from fd at off, and leaves fd's position where it was. At or
// past the end of the file it returns 0 and no error, as pread does.
func Pread(fd int, p []byte, off int64) (int, error) {
	if !ready {
		return 0, ErrUnsupported
	}
	return pread(fd, p, off)
}

func pread(fd int, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, syscall.EINVAL
	}
	pos, err := windows.Seek(h(fd), 0, 1)
	if err != nil {
		return 0, errnoOf(err)
	}
	defer windows.Seek(h(fd), pos, 0)
	var done uint32
	ov := windows.Overlapped{Offset: uint32(off), OffsetHigh: uint32(off >> 32)}
	if len(p) > 1<<30 {
		p = p[:1<<30]
	}
	if err := windows.ReadFile(h(fd), p, &done, &ov); err != nil {
		if err == windows.ERROR_HANDLE_EOF {
			return 0, nil
		}
		return int(done), errnoOf(err)
	}
	return int(done), nil
}

// Write writes all of p to fd at its current position.
func Write(fd int, p []byte) error {
	if !ready {
		return ErrUnsupported
	}
	return write(fd, p)
}

func write(fd int, p []byte) error {
	for len(p) > 0 {
		chunk := p
		if len(chunk) > 1<<30 {
			chunk = chunk[:1<<30]
		}
		var done uint32
		if err := windows.WriteFile(h(fd), chunk, &done, nil); err != nil {
			return errnoOf(err)
		}
		if done == 0 {
			return syscall.EIO
		}
		p = p[done:]
	}
	return nil
}

// Fchmod gives fd's object the one permission bit Windows keeps in a
// file's attributes: without the owner-write bit (0o200) the object is
// read-only (FILE_ATTRIBUTE_READONLY), with it, it is not, as Go's
// os.Chmod and libuv's chmod (the TypeScript reference's) do on Windows.
// The other bits have no Windows meaning and are not applied: who may
// open the object is its DACL, which Fchmod leaves alone, so a caller
// that needs owner-only makes it so with MakeOwnerOnly and proves it with
// OwnerOnly. Fstat reports the result the same way (0o666 or 0o444). A
// directory is left as it is: Windows does not read its read-only
// attribute as a permission (it never stops the creation or removal of
// entries; Explorer takes it as a mark of a customized folder). It sets the attribute through a new handle
// on the same object with attribute access only, so fd needs no write
// access and no other handle is disturbed.
func Fchmod(fd int, perm uint32) error {
	if !ready {
		return ErrUnsupported
	}
	return fchmod(fd, perm)
}

func fchmod(fd int, perm uint32) error {
	ah, err := reopen(h(fd), windows.FILE_READ_ATTRIBUTES|windows.FILE_WRITE_ATTRIBUTES, shareAll, 0)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(ah)
	var basic fileBasicInfo
	if err := queryInfo(ah, windows.FileBasicInformation, unsafe.Pointer(&basic), unsafe.Sizeof(basic)); err != nil {
		return err
	}
	if basic.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY != 0 {
		return nil
	}
	attrs := basic.FileAttributes &^ windows.FILE_ATTRIBUTE_READONLY
	if perm&0o200 == 0 {
		attrs |= windows.FILE_ATTRIBUTE_READONLY
	}
	if attrs == basic.FileAttributes {
		return nil
	}
	if attrs == 0 {
		attrs = windows.FILE_ATTRIBUTE_NORMAL // 0 would mean "leave the attributes as they are"
	}
	// Zero times mean "leave unchanged".
	set := fileBasicInfo{FileAttributes: attrs}
	return setInfo(ah, windows.FileBasicInformation, unsafe.Pointer(&set), unsafe.Sizeof(set))
}

// Ftruncate sets the size of an open handle (FileEndOfFileInfo).
func Ftruncate(fd int, size int64) error {
	if !ready {
		return ErrUnsupported
	}
	return errnoOf(windows.Ftruncate(h(fd), size))
}

// Seek sets the position of fd.
func Seek(fd int, off int64) error {
	if !ready {
		return ErrUnsupported
	}
	_, err := windows.Seek(h(fd), off, 0)
	return errnoOf(err)
}

// Mkdir creates the directory name relative to dirfd (create-new: EEXIST
// on any object at the name). perm is not applied: the directory inherits
// its DACL from its parent (owner-only is issue 22, step 5).
func Mkdir(dirfd int, name string, perm uint32) error {
	if !ready {
		return ErrUnsupported
	}
	return mkdir(dirfd, name)
}

func mkdir(dirfd int, name string) error {
	dh, err := openAt(dirfd, name, windows.FILE_LIST_DIRECTORY, windows.FILE_ATTRIBUTE_NORMAL, shareAll,
		windows.FILE_CREATE, windows.FILE_DIRECTORY_FILE)
	if err != nil {
		return err
	}
	return errnoOf(windows.CloseHandle(dh))
}

// Unlink removes the non-directory name relative to dirfd: a reparse point
// at name is removed itself, never its target; a directory fails with
// EISDIR. It opens the object, then deletes the object it opened, so what
// goes is what the open found, even if the name is taken over meanwhile.
// See deleteHandle for when the name is free again.
func Unlink(dirfd int, name string) error {
	if !ready {
		return ErrUnsupported
	}
	return removeAt(dirfd, name, windows.FILE_NON_DIRECTORY_FILE)
}

// Rmdir removes the empty directory name relative to dirfd (ENOTEMPTY if it
// is not empty, ENOTDIR if it is no directory). A directory reparse point
// (junction) at name is removed itself, never its target.
func Rmdir(dirfd int, name string) error {
	if !ready {
		return ErrUnsupported
	}
	return removeAt(dirfd, name, windows.FILE_DIRECTORY_FILE)
}

func removeAt(dirfd int, name string, options uint32) error {
	fh, err := openAt(dirfd, name, windows.DELETE|windows.FILE_READ_ATTRIBUTES, 0, shareAll, windows.FILE_OPEN, options)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(fh)
	return deleteHandle(fh)
}

// Link makes newname (relative to newdir) a hard link to the object at
// oldname (relative to olddir), never replacing newname (EEXIST). A
// reparse point at oldname is linked itself, never its target, as linkat
// without AT_SYMLINK_FOLLOW does.
func Link(olddir int, oldname string, newdir int, newname string) error {
	if !ready {
		return ErrUnsupported
	}
	return link(olddir, oldname, newdir, newname)
}

func link(olddir int, oldname string, newdir int, newname string) error {
	fh, err := openAt(olddir, oldname, windows.FILE_READ_ATTRIBUTES|windows.FILE_WRITE_ATTRIBUTES, 0, shareAll,
		windows.FILE_OPEN, windows.FILE_NON_DIRECTORY_FILE)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(fh)
	return setName(fh, fileLinkInformation, 0, newdir, newname)
}

// Rename renames oldname to newname, replacing newname (with POSIX
// semantics where the filesystem has them, so readers of the old newname
// keep it). The object at oldname is opened first without following a
// reparse point, and that object is what moves.
//
// Two refusals are transient on Windows, and Rename waits them out for up
// to ReplaceWait, retrying with backoff: a sharing violation on oldname
// (a virus scanner or indexer opened the freshly written file without
// sharing delete), and, without POSIX semantics (FAT, SMB, older Windows,
// Wine), ACCESS_DENIED because some handle has newname open, which a
// legacy replace refuses. The second is told apart from a real permission
// refusal by opening newname for delete: if that succeeds, the refusal
// was the open handle, and Rename retries; if not, it fails with that
// open's error (EACCES). When the wait runs out it fails with EBUSY, and
// nothing was renamed.
func Rename(olddir int, oldname string, newdir int, newname string) error {
	if !ready {
		return ErrUnsupported
	}
	return renameReplace(olddir, oldname, newdir, newname, ReplaceWait)
}

// ReplaceWait bounds how long Rename waits out transient refusals. Scanners
// hold a new file for milliseconds to a few hundred; a reader of the old
// file as long as it reads.
var ReplaceWait = 2 * time.Second

func renameReplace(olddir int, oldname string, newdir int, newname string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	pause := time.Millisecond
	for {
		err := renameAt(olddir, oldname, newdir, newname, true)
		switch err {
		case syscall.EBUSY:
		case syscall.EACCES:
			if perr := targetDeletable(newdir, newname); perr != nil {
				return perr
			}
		default:
			return err
		}
		if !time.Now().Before(deadline) {
			return syscall.EBUSY
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// targetDeletable is nil when this process may delete newname (so a
// replace refused with ACCESS_DENIED was refused for a handle open on
// it), or newname is gone; otherwise the error of the delete open.
func targetDeletable(newdir int, newname string) error {
	fh, err := openAt(newdir, newname, windows.DELETE|windows.FILE_READ_ATTRIBUTES, 0, shareAll, windows.FILE_OPEN, 0)
	switch err {
	case nil:
		windows.CloseHandle(fh)
		return nil
	case syscall.ENOENT, syscall.EBUSY:
		return nil
	}
	return err
}

// RenameNoReplace renames oldname to newname and fails with EEXIST if
// newname exists (FILE_RENAME_INFORMATION with ReplaceIfExists false, on
// every Windows filesystem: there is no unavailable case).
func RenameNoReplace(olddir int, oldname string, newdir int, newname string) error {
	if !ready {
		return ErrUnsupported
	}
	return renameAt(olddir, oldname, newdir, newname, false)
}

func renameAt(olddir int, oldname string, newdir int, newname string, replace bool) error {
	fh, err := openAt(olddir, oldname, windows.DELETE|windows.FILE_READ_ATTRIBUTES, 0, shareAll, windows.FILE_OPEN, 0)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(fh)
	return renameHandle(fh, newdir, newname, replace)
}

// Exchange: Windows has no atomic exchange of two names (ReplaceFile is
// not atomic). ENOSYS, so callers take their no-exchange path
// (atomic_unavailable where nothing else is safe).
func Exchange(olddir int, oldname string, newdir int, newname string) error {
	if !ready {
		return ErrUnsupported
	}
	return syscall.ENOSYS
}

// Fsync flushes fd to stable storage (FlushFileBuffers). A directory
// handle needs write access for that, which the handles of OpenDir do not
// hold, so a directory is reopened for writing through its handle and
// flushed through the new handle. Whether a directory flush makes NTFS's
// record of a rename durable cannot be shown without a power cut.
func Fsync(fd int) error {
	if !ready {
		return ErrUnsupported
	}
	return fsync(fd)
}

func fsync(fd int) error {
	var std fileStandardInfo
	if err := queryInfo(h(fd), fileStandardInformation, unsafe.Pointer(&std), unsafe.Sizeof(std)); err != nil {
		return err
	}
	if std.Directory == 0 {
		return errnoOf(windows.FlushFileBuffers(h(fd)))
	}
	wh, err := reopen(h(fd), windows.FILE_LIST_DIRECTORY|windows.FILE_GENERIC_WRITE, shareAll, windows.FILE_DIRECTORY_FILE)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(wh)
	return errnoOf(windows.FlushFileBuffers(wh))
}

// ReadDirNames lists the names in the open directory fd (without "." and
// ".."). It lists through a new handle on the same directory, so fd's own
// enumeration state is untouched; fd stays open and owned by the caller.
func ReadDirNames(fd int) ([]string, error) {
	if !ready {
		return nil, ErrUnsupported
	}
	ents, err := readDir(fd)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name
	}
	return names, nil
}
