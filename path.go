package exactfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/internal/sys"
	"github.com/exactfs/exactfs/internal/winpath"
)

// splitPath cuts path into its components. Empty components and "." are
// dropped; ".." is refused, because a walk that may climb can be steered out
// of the directory the caller meant.
//
// On Windows the path is taken apart by internal/winpath, which also
// refuses, before any system call, every form and name a Win32 program
// would resolve to another object than exactfs's handle-relative opens do
// (drive-relative "C:x", "\x", device namespaces, alternate data streams,
// trailing dots and spaces, DOS device names); abs means the path names
// its volume, a drive ("C:\") or a share ("\\server\share\"), which
// volumeRoot gives back.
func splitPath(op, path string) (abs bool, comps []string, err error) {
	if windowsPaths {
		return splitWindowsPath(op, path)
	}
	if path == "" {
		return false, nil, newErr(op, path, CodeInvalidRequest, "empty path")
	}
	if strings.IndexByte(path, 0) >= 0 {
		return false, nil, newErr(op, path, CodeInvalidRequest, "path contains a NUL byte")
	}
	abs = filepath.IsAbs(path)
	// The components between slashes, as strings.Split would give them,
	// without its slice: one allocation, sized at the first component
	// kept (this runs for every path-taking call).
	for rest := path; ; {
		c, after, more := strings.Cut(rest, "/")
		switch c {
		case "", ".":
		case "..":
			return abs, nil, newErr(op, path, CodeInvalidRequest, `".." is refused: name the path without climbing`)
		default:
			if comps == nil {
				comps = make([]string, 0, strings.Count(rest, "/")+1)
			}
			comps = append(comps, c)
		}
		if !more {
			return abs, comps, nil
		}
		rest = after
	}
}

// plainName reports whether name is one component that splitPath would
// keep as it is: not empty, not "." or "..", no separator, no NUL. Such a
// name beneath a Dir needs no walk (resolve, Dir.join). Windows names go
// through their own rules (splitWindowsPath) always.
func plainName(name string) bool {
	if windowsPaths || name == "" || name == "." || name == ".." {
		return false
	}
	for i := 0; i < len(name); i++ {
		if name[i] == '/' || name[i] == 0 {
			return false
		}
	}
	return true
}

// windowsPaths selects the Windows path rules. It is a variable, not a
// build constraint, so that the rules are also exercised by the tests of
// every platform (path_rules_test.go); only a Windows build sets it.
var windowsPaths = runtime.GOOS == "windows"

func splitWindowsPath(op, path string) (abs bool, comps []string, err error) {
	p, err := winpath.Parse(path)
	if err != nil {
		code := CodeInvalidRequest
		if errors.Is(err, winpath.ErrNotUTF8) {
			code = CodeNotUTF8
		}
		var we *winpath.Error
		if errors.As(err, &we) {
			detail := we.Reason
			if we.Name != "" && we.Name != we.Path {
				detail = "path component " + strconv.Quote(we.Name) + " " + detail
			}
			return false, nil, newErr(op, path, code, detail)
		}
		return false, nil, newErr(op, path, code, err.Error())
	}
	return p.IsAbs(), p.Comps, nil
}

// volumeRoot is the directory an absolute path's walk starts from: "/" on
// Unix; on Windows the root of the path's volume, "C:\" for a drive or
// "\\server\share\" for a share, as written (the system resolves the
// drive letter or the share, as it resolves a trusted link). path has
// passed splitPath with abs true.
func volumeRoot(path string) string {
	if !windowsPaths {
		return "/"
	}
	p, err := winpath.Parse(path)
	if err != nil || !p.IsAbs() {
		return "/" // unreachable: splitPath accepted path as absolute
	}
	return p.Volume + `\`
}

// joinAbs is the absolute path of comps beneath the volume root of path.
func joinAbs(path string, comps []string) string {
	if !windowsPaths {
		if len(comps) == 0 {
			return "/"
		}
		// A path already written that way (a trailing slash aside) is
		// used as it is, without building it again.
		if p := strings.TrimRight(path, "/"); spells(p, comps) {
			return p
		}
		return "/" + strings.Join(comps, "/")
	}
	return volumeRoot(path) + strings.Join(comps, `\`)
}

// spells reports whether p is exactly "/" followed by comps joined by "/".
func spells(p string, comps []string) bool {
	i := 0
	for _, c := range comps {
		if i >= len(p) || p[i] != '/' || !strings.HasPrefix(p[i+1:], c) {
			return false
		}
		i += 1 + len(c)
	}
	return i == len(p)
}

// handle is a directory descriptor that may or may not be ours to close.
// A handle on a Dir's own descriptor (ref set) holds one reference to the
// Dir, so the descriptor stays open, and its number stays ours, until the
// handle is closed, however the Dir's Close races it.
type handle struct {
	fd    int
	owned bool
	ref   *Dir
}

func (h handle) close() {
	switch {
	case h.owned:
		sys.Close(h.fd)
	case h.ref != nil:
		h.ref.decref()
	}
}

// walk is the one place in exactfs that turns a path into a directory
// descriptor. It opens comps beneath start one component at a time with
// O_NOFOLLOW|O_DIRECTORY, so a symlink in any component is refused instead
// of followed, and a FIFO or device in a directory position is refused
// without being opened for I/O. path is only used in error messages.
func walk(op, path string, start handle, comps []string) (handle, error) {
	h := start
	for _, c := range comps {
		fd, err := sys.OpenDir(h.fd, c)
		if err != nil {
			e := componentError(op, path, h.fd, c, err)
			h.close()
			return handle{}, e
		}
		h.close()
		h = handle{fd: fd, owned: true}
	}
	return h, nil
}

// componentError explains why the directory component name could not be
// opened, by looking at what is there (lstat, never followed).
func componentError(op, path string, dirfd int, name string, err error) error {
	if err == syscall.ELOOP || err == syscall.ENOTDIR {
		if st, lerr := sys.Lstat(dirfd, name); lerr == nil && !st.Mode.IsDir() {
			e := typeError(op, path, st.Mode, "a directory")
			e.Detail = "path component " + strconv.Quote(name) + " " + e.Detail
			return e
		}
	}
	e := wrap(op, path, err).(*Error)
	if e.Code == CodeNotFound {
		e.Detail = "path component " + strconv.Quote(name) + " does not exist"
	}
	return e
}

// typeError reports that the object at path is of the wrong kind.
func typeError(op, path string, mode fs.FileMode, want string) *Error {
	code := CodeNotRegularFile
	if want == "a directory" {
		code = CodeNotDirectory
	}
	if mode&fs.ModeSymlink != 0 {
		code = CodeReparsePoint
	}
	return &Error{Op: op, Path: path, Code: code,
		Detail: "is " + KindName(mode) + ", not " + want + "; refusing to touch it"}
}

// KindName names the type of mode for messages: "a symlink", "a FIFO
// (named pipe)", "a directory".
func KindName(mode fs.FileMode) string {
	switch {
	case mode.IsRegular():
		return "a regular file"
	case mode.IsDir():
		return "a directory"
	case mode&fs.ModeSymlink != 0:
		return "a symlink"
	case mode&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	case mode&fs.ModeCharDevice != 0:
		return "a character device"
	case mode&fs.ModeDevice != 0:
		return "a block device"
	}
	return "an object of unknown type"
}

// resolve walks to the parent directory of name, which is relative to start
// (or absolute, when start is nil). It returns the parent handle and the
// final component. The caller closes the handle.
func resolve(op string, start *Dir, name string) (handle, string, error) {
	if start != nil && plainName(name) {
		// A name directly beneath start: splitPath would give it as the
		// one component, and openPath start's own descriptor, borrowed;
		// the same, without their allocations (every Dir method on a
		// name, several per lock cycle).
		if err := start.incref(op, name); err != nil {
			return handle{}, "", err
		}
		return handle{fd: start.fd, ref: start}, name, nil
	}
	abs, comps, err := splitPath(op, name)
	if err != nil {
		return handle{}, "", err
	}
	if len(comps) == 0 {
		return handle{}, "", newErr(op, name, CodeInvalidRequest, "the path names no file")
	}
	p, err := openPath(op, name, start, abs, comps[:len(comps)-1])
	if err != nil {
		return handle{}, "", err
	}
	return p, comps[len(comps)-1], nil
}

// openPathNoFollow opens the directory comps names beneath start (or beneath the
// root or the working directory, when start is nil). With start set and no
// components it returns start's own descriptor, not owned.
//
// On Linux one openat2(RESOLVE_NO_SYMLINKS) call does the whole walk; if it
// fails for any reason, walk repeats it one component at a time, which
// either succeeds (openat2 unavailable) or says exactly which component is
// wrong. Both refuse a symlink in every component.
func openPathNoFollow(op, name string, start *Dir, abs bool, comps []string) (handle, error) {
	var borrowed handle
	switch {
	case start != nil && abs:
		where := "the directory"
		if start.path != "" {
			where = start.path
		}
		return handle{}, newErr(op, name, CodeInvalidRequest, "an absolute path is refused here; give a path relative to "+where)
	case start != nil:
		if err := start.incref(op, name); err != nil {
			return handle{}, err
		}
		borrowed = handle{fd: start.fd, ref: start}
		if len(comps) == 0 {
			return borrowed, nil
		}
	}
	// Relative paths are bound to one opened directory: AT_FDCWD would be
	// re-read at every step (another goroutine may chdir), and a parent
	// handle of AT_FDCWD could not be fsynced.
	base, rel := sys.AtCWD, ""
	switch {
	case start != nil:
		base, rel = start.fd, strings.Join(comps, "/")
	case abs:
		rel = joinAbs(name, comps)
	case len(comps) == 0:
		rel = "."
	default:
		rel = strings.Join(comps, "/")
	}
	if !hook.IsSet(hook.ForceWalk) {
		if fd, err := sys.OpenDirNoSymlinks(base, rel); err == nil {
			borrowed.close()
			return handle{fd: fd, owned: true}, nil
		}
	}
	var h handle
	switch {
	case start != nil:
		h = borrowed
	default:
		root := "."
		if abs {
			root = volumeRoot(name)
		}
		fd, err := sys.OpenDir(sys.AtCWD, root)
		if err != nil {
			return handle{}, wrap(op, name, err)
		}
		h = handle{fd: fd, owned: true}
	}
	return walk(op, name, h, comps)
}

// Dir is an open directory, bound to the inode it was opened on. Its
// methods take names relative to it, resolved without following symlinks;
// ".." and absolute names are refused. A Dir must be closed.
//
// A Dir is safe for concurrent use, Close included: its descriptor is
// reference-counted, as os.Root's is. Every method holds a reference while
// it uses the descriptor, and Close only marks the Dir closed; the
// descriptor is closed when the last method using it returns. So a method
// racing Close either runs to its end on the directory it was given or
// fails with a "closed" error (errors.Is os.ErrClosed); it never acts on
// a closed descriptor, or on a number the kernel has since given to
// another file.
type Dir struct {
	fd   int
	path string
	dev  uint64
	ino  uint64

	mu     sync.Mutex
	refs   int      // methods using fd now
	closed bool     // Close was called; fd is closed when refs drops to 0
	lockf  *os.File // Windows: the lock file TryLock holds locked (dirlock_windows.go); closed by Close

	cleanup runtime.Cleanup // reports a Dir dropped without Close (leak.go)
}

// incref takes a reference to d's descriptor for one operation, or fails
// when d is closed.
func (d *Dir) incref(op, name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return &Error{Op: op, Path: d.join(name), Code: CodeInvalidRequest, Err: os.ErrClosed,
			Detail: "the directory handle " + d.path + " was closed"}
	}
	d.refs++
	return nil
}

// decref drops a reference; the last one after Close closes the descriptor.
func (d *Dir) decref() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.refs--
	if d.refs < 0 {
		panic("exactfs: Dir reference count below zero")
	}
	if d.closed && d.refs == 0 {
		sys.Close(d.fd)
		d.fd = -1
	}
}

// use runs f on d's descriptor, holding a reference for its duration.
func (d *Dir) use(op string, f func(fd int) error) error {
	if err := d.incref(op, ""); err != nil {
		return err
	}
	defer d.decref()
	return f(d.fd)
}

// OpenDir opens the directory at path without following a symlink in any
// component.
func OpenDir(path string) (*Dir, error) { return openDir(nil, "opendir", path) }

// OpenDir opens the directory name beneath d.
func (d *Dir) OpenDir(name string) (*Dir, error) { return openDir(d, "opendir", name) }

func openDir(start *Dir, op, name string) (*Dir, error) {
	abs, comps, err := splitPath(op, name)
	if err != nil {
		return nil, err
	}
	display := name
	if start != nil {
		display = filepath.Join(start.path, name)
	}
	h, err := openPath(op, name, start, abs, comps)
	if err != nil {
		return nil, err
	}
	if !h.owned {
		// start itself: a descriptor of our own, a new open of ".".
		fd, err := sys.OpenDir(h.fd, ".")
		h.close()
		if err != nil {
			return nil, wrap(op, name, err)
		}
		h = handle{fd: fd, owned: true}
	}
	st, err := sys.Fstat(h.fd)
	if err != nil {
		h.close()
		return nil, wrap(op, name, err)
	}
	d := &Dir{fd: h.fd, path: display, dev: st.Dev, ino: st.Ino}
	watchDir(d)
	return d, nil
}

// Close releases the directory: later calls of its methods fail, and the
// descriptor is closed as soon as no method still uses it (at once, when
// none does). Calling Close again does nothing.
func (d *Dir) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	d.cleanup.Stop()
	if d.lockf != nil {
		// The lock TryLock took lasts as long as d's open (as flock's does
		// on Unix, where closing fd drops it): closing its handle drops it.
		d.lockf.Close()
		d.lockf = nil
	}
	if d.refs > 0 {
		return nil
	}
	err := sys.Close(d.fd)
	d.fd = -1
	if err != nil {
		return wrap("close", d.path, err)
	}
	return nil
}

// Use runs f on d's descriptor, holding a reference to d for f's
// duration: a Close racing f waits for it to return before the descriptor
// is closed, and f never runs once d is closed (Use then fails with an
// error satisfying errors.Is(err, os.ErrClosed)). f must not keep the
// number or close it (a Close racing it, even from f, waits). It is for the packages of this module
// whose system calls exactfs does not wrap as a method (statelock's claim
// directory); File returns a descriptor of the caller's own. Use costs no
// system call and, when f does not escape, no allocation.
//
// There is no Fd method: a bare number taken without a reference would be
// closed under its user by a racing Close or the leak detector.
func (d *Dir) Use(f func(fd int) error) error { return d.use("use", f) }

// RawStat is the system's stat record as the Raw methods return it (device,
// inode, links, size, times, mode, owner), with no allocation. It is for
// the packages of this module, which name it here rather than reach for
// the system-call layer.
type RawStat = sys.Stat

// LstatRaw is Lstat of a single name directly beneath d (no path walk), in
// the form the lock's hot path needs: the system's stat record, with no
// allocation, and the system call's own error (errors.Is works with
// fs.ErrNotExist and the errno). name must not contain a separator. It is
// for the packages of this module; others use Lstat.
func (d *Dir) LstatRaw(name string) (st RawStat, err error) {
	for i := 0; i < len(name); i++ {
		if os.IsPathSeparator(name[i]) {
			return st, &Error{Op: "lstat", Path: d.join(name), Code: CodeInvalidRequest,
				Detail: "LstatRaw takes one name directly beneath the directory, without a separator: use Lstat for a path"}
		}
	}
	err = d.use("lstat", func(fd int) (err error) {
		st, err = sys.Lstat(fd, name)
		return err
	})
	return st, err
}

// StatRaw is Stat in the system's stat record (owner, group, mode), with no
// allocation; see LstatRaw.
func (d *Dir) StatRaw() (st RawStat, err error) {
	err = d.use("stat", func(fd int) (err error) {
		st, err = sys.Fstat(fd)
		return err
	})
	return st, err
}

// Chown sets the owner and group of the directory d is open on, through
// its descriptor (-1 leaves one unchanged): the directory d was opened on,
// whatever its name names now. Where there are no uids (Windows) it fails
// with ErrUnsupported.
func (d *Dir) Chown(uid, gid int) error {
	err := d.use("chown", func(fd int) error { return sys.Fchown(fd, uid, gid) })
	if err == sys.ErrUnsupported {
		return &Error{Op: "chown", Path: d.path, Code: CodeUnsupported, Err: err, Detail: "there are no owner uids here"}
	}
	return wrap("chown", d.path, err)
}

// File returns a new *os.File on a duplicate of d's descriptor, bound to the
// same directory inode. The caller closes it; d stays open.
func (d *Dir) File() (*os.File, error) {
	var fd int
	err := d.use("dup", func(dfd int) (err error) {
		fd, err = sys.Dup(dfd)
		return err
	})
	if err != nil {
		return nil, wrap("dup", d.path, err)
	}
	return os.NewFile(uintptr(fd), d.path), nil
}

// Name returns the path d was opened with.
func (d *Dir) Name() string { return d.path }

// Sync flushes the directory itself, which makes the creation, rename or
// removal of its entries durable.
func (d *Dir) Sync() error {
	if err := d.use("fsync", sys.Fsync); err != nil {
		if CodeOf(err) != "" {
			return err
		}
		return &Error{Op: "fsync", Path: d.path, Code: CodeDurabilityFailed, Err: err}
	}
	return nil
}

// Stat returns the identity of the directory d is bound to, as it is now.
func (d *Dir) Stat() (Identity, error) {
	var st sys.Stat
	err := d.use("stat", func(fd int) (err error) {
		st, err = sys.Fstat(fd)
		return err
	})
	if err != nil {
		return Identity{}, wrap("stat", d.path, err)
	}
	return identityOf(st, [32]byte{}), nil
}

// Inode returns the device and inode d was opened on. A caller that binds
// itself to a directory compares them with a fresh OpenDir of the path to
// learn whether the path still names the same directory.
func (d *Dir) Inode() (dev, ino uint64) { return d.dev, d.ino }

func (d *Dir) join(name string) string {
	if d == nil {
		return name
	}
	// filepath.Join cleans what it joins (three allocations for a
	// directory given with a trailing slash); a plain name beneath a
	// directory path that is clean but for trailing slashes joins to the
	// same string with one concatenation.
	if p := strings.TrimRight(d.path, "/"); p != "" && p != "." && plainName(name) && filepath.Clean(p) == p {
		return p + "/" + name
	}
	return filepath.Join(d.path, name)
}

// fileInfo is the fs.FileInfo of an lstat.
type fileInfo struct {
	name string
	st   sys.Stat
}

func (fi fileInfo) Name() string       { return fi.name }
func (fi fileInfo) Size() int64        { return fi.st.Size }
func (fi fileInfo) Mode() fs.FileMode  { return fi.st.Mode }
func (fi fileInfo) ModTime() time.Time { return time.Unix(0, fi.st.MtimeNs) }
func (fi fileInfo) IsDir() bool        { return fi.st.Mode.IsDir() }

// Sys returns an Identity without a digest (no bytes were read).
func (fi fileInfo) Sys() any { return identityOf(fi.st, [32]byte{}) }

// Lstat describes the object at path without following a symlink anywhere.
func Lstat(path string) (fs.FileInfo, error) { return lstat(nil, path) }

// Lstat describes the object at name beneath d without following a symlink.
func (d *Dir) Lstat(name string) (fs.FileInfo, error) { return lstat(d, name) }

func lstat(d *Dir, name string) (fs.FileInfo, error) {
	p, base, err := resolve("lstat", d, name)
	if err != nil {
		return nil, err
	}
	defer p.close()
	st, err := sys.Lstat(p.fd, base)
	if err != nil {
		return nil, wrap("lstat", d.join(name), err)
	}
	return fileInfo{name: base, st: st}, nil
}

// Mkdir creates the directory name with exactly perm (umask does not apply:
// the mode is set on the created directory afterwards through a descriptor).
func Mkdir(path string, perm fs.FileMode) error { return mkdir(nil, path, perm) }

// Mkdir creates the directory name beneath d; see Mkdir.
func (d *Dir) Mkdir(name string, perm fs.FileMode) error { return mkdir(d, name, perm) }

func mkdir(d *Dir, name string, perm fs.FileMode) error {
	p, base, err := resolve("mkdir", d, name)
	if err != nil {
		return err
	}
	defer p.close()
	if err := sys.Mkdir(p.fd, base, uint32(perm.Perm())); err != nil {
		return wrap("mkdir", d.join(name), err)
	}
	fd, err := sys.OpenDir(p.fd, base)
	if err != nil {
		return wrap("mkdir", d.join(name), err)
	}
	defer sys.Close(fd)
	if err := sys.Fchmod(fd, uint32(perm.Perm())); err != nil {
		return wrap("mkdir", d.join(name), err)
	}
	return nil
}

// Rmdir removes the empty directory name beneath d.
func (d *Dir) Rmdir(name string) error { return rmdir(d, name) }

// Rmdir removes the empty directory at path. rmdir(2) never removes a
// non-empty directory, so this cannot destroy anything but an empty name.
func Rmdir(path string) error { return rmdir(nil, path) }

func rmdir(d *Dir, name string) error {
	p, base, err := resolve("rmdir", d, name)
	if err != nil {
		return err
	}
	defer p.close()
	if err := sys.Rmdir(p.fd, base); err != nil {
		if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			return &Error{Op: "rmdir", Path: d.join(name), Code: CodeDestinationExists,
				Detail: "the directory is not empty; nothing was removed", Err: err}
		}
		return wrap("rmdir", d.join(name), err)
	}
	return nil
}

// ReadDirNames lists the names in the directory d, unsorted.
func (d *Dir) ReadDirNames() ([]string, error) {
	var names []string
	err := d.use("readdir", func(fd int) (err error) {
		names, err = sys.ReadDirNames(fd)
		return err
	})
	if err != nil {
		return nil, wrap("readdir", d.path, err)
	}
	return names, nil
}

// OpenFile opens the regular file at path with the os.O_* flags, adding
// O_NOFOLLOW, O_NONBLOCK and O_CLOEXEC, walking no symlink, and proving from
// the descriptor that it is a regular file. The descriptor is in blocking
// mode only as far as regular files ever block. An exclusive create
// (O_CREATE|O_EXCL) is opened without O_NONBLOCK: it can only make a new
// regular file, never open a FIFO or device that is already there.
func OpenFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return openFile(nil, path, flag, perm)
}

// OpenFile opens the regular file name beneath d; see OpenFile.
func (d *Dir) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return openFile(d, name, flag, perm)
}

func openFile(d *Dir, name string, flag int, perm fs.FileMode) (*os.File, error) {
	p, base, err := resolve("open", d, name)
	if err != nil {
		return nil, err
	}
	defer p.close()
	fd, _, err := openRegular("open", d.join(name), p.fd, base, flag, perm)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), d.join(name)), nil
}

// openRegular opens base beneath dirfd and proves from the descriptor that
// it is a regular file, returning the fstat that proved it. Before opening
// an existing name it lstats it, so that a device or FIFO is refused
// without the side effects an open can have; the lstat is only a courtesy,
// the proof is the fstat.
func openRegular(op, path string, dirfd int, base string, flag int, perm fs.FileMode) (int, sys.Stat, error) {
	if flag&os.O_CREATE == 0 {
		st, err := sys.Lstat(dirfd, base)
		if err != nil {
			return -1, sys.Stat{}, wrap(op, path, err)
		}
		if !st.Mode.IsRegular() {
			return -1, sys.Stat{}, typeError(op, path, st.Mode, "a regular file")
		}
	}
	fd, err := sys.Open(dirfd, base, flag, uint32(perm.Perm()))
	if err != nil {
		if err == syscall.ELOOP || err == syscall.ENXIO || err == syscall.EISDIR {
			if st, lerr := sys.Lstat(dirfd, base); lerr == nil && !st.Mode.IsRegular() {
				return -1, sys.Stat{}, typeError(op, path, st.Mode, "a regular file")
			}
		}
		return -1, sys.Stat{}, wrap(op, path, err)
	}
	st, err := sys.Fstat(fd)
	if err != nil {
		sys.Close(fd)
		return -1, sys.Stat{}, wrap(op, path, err)
	}
	if !st.Mode.IsRegular() {
		sys.Close(fd)
		return -1, sys.Stat{}, typeError(op, path, st.Mode, "a regular file")
	}
	return fd, st, nil
}

// MkdirAll creates the directory path and every missing directory above
// it, each with exactly perm, following no symlink: the deepest directory
// that exists is opened as OpenDir opens it (a trusted system link at the
// start of an absolute path is followed, see SystemPath; any other symlink
// is refused with reparse_point, naming it), and each missing component is
// made beneath the descriptor of its parent. So a symlink in an existing
// component never leads the creation elsewhere: it is refused before
// anything is made. A directory that exists already, path included, is
// left as it is; one made by someone else meanwhile is used, not refused.
func MkdirAll(path string, perm fs.FileMode) error { return mkdirAll(path, perm, false) }

// MkdirAllForParentOwner is MkdirAll for a caller that runs as root on
// behalf of the owners of the tree it works in (the state lock's
// WithMakeDir, the exactfs command's --mkdir): each directory it makes is
// given to the owner and group of the directory it is made in, unless that
// parent is root's. A directory root made in a user's tree was root's,
// 0700: everything a lock then made in it was root's too (the lock gives
// its objects to their directory's owner), and the user's own processes
// were locked out for good. Only a directory this call made is given
// away, and only while it is still what mkdir made (root's, empty, its
// two links, checked through the descriptor the chown goes through): a
// directory someone else put at the name meanwhile is used as it is and
// never chowned. For a caller that is not root (or where there are no
// uids) it is MkdirAll.
func MkdirAllForParentOwner(path string, perm fs.FileMode) error {
	return mkdirAll(path, perm, os.Geteuid() == 0)
}

func mkdirAll(path string, perm fs.FileMode, give bool) error {
	abs, comps, err := splitPath("mkdir", path)
	if err != nil {
		return err
	}
	prefix := func(n int) string {
		p := strings.Join(comps[:n], "/")
		switch {
		case abs:
			return joinAbs(path, comps[:n])
		case p == "":
			return "."
		}
		return p
	}
	// The deepest directory that exists: nearly always path itself or its
	// parent, so look from the bottom up.
	n := len(comps)
	var d *Dir
	for ; ; n-- {
		d, err = OpenDir(prefix(n))
		if err == nil {
			break
		}
		if n == 0 || !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	defer func() { d.Close() }()
	for _, c := range comps[n:] {
		err := d.Mkdir(c, perm)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		made := err == nil
		next, err := d.OpenDir(c)
		if err != nil {
			return err
		}
		if made && give {
			if err := giveToParentOwner(d, next); err != nil {
				next.Close()
				return err
			}
		}
		d.Close()
		d = next
	}
	return nil
}

// giveToParentOwner gives child, a directory root has just made in parent,
// to parent's owner and group (MkdirAllForParentOwner), when parent is not
// root's and child is still root's and empty (two links: a directory
// someone swapped in, or one already holding entries, is left alone).
func giveToParentOwner(parent, child *Dir) error {
	p, err := parent.StatRaw()
	if err != nil || p.Uid == 0 {
		return err
	}
	st, err := child.StatRaw()
	if err != nil {
		return err
	}
	if st.Uid != 0 || st.Nlink != 2 {
		return nil
	}
	return child.Chown(int(p.Uid), int(p.Gid))
}
