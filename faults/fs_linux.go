package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/testfs"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Op is a call the layer can fail.
type Op string

// The calls, as the FUSE layer sees them. Name is the base name of the
// entry the call is about: the new name for Create and Mkdir, the removed
// one for Unlink and Rmdir, the source for Rename, the file (as it was
// named when opened) for Read, Write and Fsync, the directory for FsyncDir.
const (
	OpCreate   Op = "create"
	OpMkdir    Op = "mkdir"
	OpUnlink   Op = "unlink"
	OpRmdir    Op = "rmdir"
	OpRename   Op = "rename"
	OpOpen     Op = "open"
	OpRead     Op = "read"
	OpWrite    Op = "write"
	OpFsync    Op = "fsync"
	OpFsyncDir Op = "fsyncdir"
)

// Rule fails calls of one kind on matching names.
type Rule struct {
	Op    Op
	Match func(name string) bool // nil matches every name
	Errno syscall.Errno
	// Done makes the call happen on the backing filesystem first and
	// only then report Errno: a rename that was made, a write that was
	// written, though the caller is told it failed.
	Done bool
	// Times limits how many calls fail (0: every matching call until
	// Clear).
	Times int
}

// A Hit is one call the layer failed.
type Hit struct {
	Op    Op
	Name  string
	Errno syscall.Errno
	Done  bool
}

func (h Hit) String() string {
	done := ""
	if h.Done {
		done = " (done first)"
	}
	return fmt.Sprintf("%s %s: %v%s", h.Op, h.Name, h.Errno, done)
}

// FS is a mounted fault layer.
type FS struct {
	// Dir is the mount point; Backing is the directory it shows.
	Dir, Backing string

	conn  uint64 // the FUSE connection's number
	mu    sync.Mutex
	rules []*rule
	hits  []Hit
	// open holds the release of every backing descriptor the layer has
	// open. After an abort the kernel sends no RELEASE, so the cleanup
	// closes what is left, or the loop mount below stays busy.
	open map[any]func()
}

func (f *FS) opened(h any, release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open == nil {
		f.open = map[any]func(){}
	}
	f.open[h] = release
}

func (f *FS) released(h any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.open, h)
}

func (f *FS) releaseAll() {
	f.mu.Lock()
	left := f.open
	f.open = nil
	f.mu.Unlock()
	for _, release := range left {
		release()
	}
}

type rule struct {
	Rule
	used int
}

// Fail adds a rule; it applies from the next call on.
func (f *FS) Fail(r Rule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, &rule{Rule: r})
}

// Clear removes every rule: the fault clears.
func (f *FS) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = nil
}

// Hits returns the calls failed so far.
func (f *FS) Hits() []Hit {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Hit(nil), f.hits...)
}

// check decides a call: 0, or the errno to report and whether to do the
// call first.
func (f *FS) check(op Op, name string) (syscall.Errno, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.rules {
		if r.Op != op || (r.Match != nil && !r.Match(name)) || (r.Times > 0 && r.used >= r.Times) {
			continue
		}
		r.used++
		f.hits = append(f.hits, Hit{Op: op, Name: name, Errno: r.Errno, Done: r.Done})
		return r.Errno, r.Done
	}
	return 0, false
}

// Mount mounts a fault layer over a new directory on a fresh loop-mounted
// ext4 (as root; see testfs.Require for elsewhere) and unmounts it when the
// test ends. No rule is set: every call works until Fail.
func Mount(t testing.TB) *FS {
	t.Helper()
	testfs.RequireRoot(t)
	_, err := os.Stat("/dev/fuse")
	testfs.Require(t, "/dev/fuse", err == nil, fmt.Sprint(err))
	loop := testfs.LoopExt4(t, 32)
	f := &FS{Backing: filepath.Join(loop, "backing"), Dir: filepath.Join(t.TempDir(), "mnt")}
	for _, d := range []string{f.Backing, f.Dir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	loopRoot, err := fs.NewLoopbackRoot(f.Backing)
	if err != nil {
		t.Fatal(err)
	}
	// Every child is wrapped the same way (WrapChild).
	root := &node{LoopbackNode: loopRoot.(*fs.LoopbackNode), f: f}
	zero := time.Duration(0)
	server, err := fs.Mount(f.Dir, root, &fs.Options{
		// No attribute or entry caching: every stat reaches the backing
		// filesystem, as exactfs's identity checks expect of a local one.
		EntryTimeout:    &zero,
		AttrTimeout:     &zero,
		NegativeTimeout: &zero,
		MountOptions: fuse.MountOptions{
			FsName:      "exactfs-faults",
			Name:        "exactfs-faults",
			DirectMount: true, // root: mount(2) itself, no fusermount
			// EnableLocks stays off: the kernel then keeps file locks
			// (exactfs's OFD locks) itself, as on a local filesystem.
			// A loopback that forwarded them would take them all in
			// this one process, where they never conflict.
		},
	})
	if err != nil {
		testfs.Require(t, "a FUSE mount", false, err.Error())
	}
	t.Cleanup(func() {
		liveMu.Lock()
		delete(live, f)
		liveMu.Unlock()
		f.Clear()
		// umount(2) directly: server.Unmount would run fusermount. A
		// process that used statelock keeps descriptors parked for up to
		// a second after its last release, so EBUSY is retried that long.
		var err error
		for i := 0; i < 150; i++ {
			if err = syscall.Unmount(f.Dir, 0); err != syscall.EBUSY {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			// Something of this process still has a file open on it:
			// abort the connection so that the close cannot wait for
			// a server that is gone.
			t.Errorf("unmount the fault layer %s: %v; aborting its connection and detaching it", f.Dir, err)
			if aerr := f.abort(); aerr != nil {
				t.Errorf("abort %s: %v", f.Dir, aerr)
			}
			syscall.Unmount(f.Dir, syscall.MNT_DETACH)
		}
		server.Wait()
		f.releaseAll()
	})
	if err := server.WaitMount(); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(f.Dir, &st); err != nil {
		t.Fatal(err)
	}
	f.conn = minor(st.Dev)
	liveMu.Lock()
	live[f] = true
	liveMu.Unlock()
	return f
}

// minor is the minor number of a device number: for a FUSE mount, the
// number of its connection in /sys/fs/fuse/connections.
func minor(dev uint64) uint64 { return (dev & 0xff) | ((dev >> 12) & 0xfff00) }

// The mounts of this process, for AbortAll.
var (
	liveMu sync.Mutex
	live   = map[*FS]bool{}
)

// abort aborts the FUSE connection of f: every request waiting for the
// server fails at once (ENOTCONN), and so does every later call on the
// mount. It is the way out of a server that cannot answer: a process that
// serves a FUSE mount and uses it itself can deadlock (see AbortAll).
func (f *FS) abort() error {
	const conns = "/sys/fs/fuse/connections"
	ctl := filepath.Join(conns, fmt.Sprint(f.conn), "abort")
	if _, err := os.Stat(ctl); os.IsNotExist(err) {
		// fusectl is not mounted yet (it usually is by systemd).
		if err := syscall.Mount("fusectl", conns, "fusectl", 0, ""); err != nil && err != syscall.EBUSY {
			return fmt.Errorf("mount fusectl on %s: %w", conns, err)
		}
	}
	return os.WriteFile(ctl, []byte("1"), 0o200)
}

// AbortAll aborts the FUSE connection of every fault layer this process
// has mounted and not yet unmounted. A test binary that serves its own
// FUSE mount must never exit, or stop the world for a garbage collection
// while one of its threads is blocked in the kernel waiting for that very
// server: a child forked onto the mount before its exec (cmd.Dir on the
// mount), or the exit of a binary that still has files open on it (a
// timeout panic skips the cleanups that would unmount). TestMain calls
// AbortAll shortly before the test timeout, so such a hang ends as a
// failed run instead of a process that never exits.
func AbortAll() {
	liveMu.Lock()
	defer liveMu.Unlock()
	for f := range live {
		if err := f.abort(); err != nil {
			fmt.Fprintf(os.Stderr, "faults: abort the FUSE connection of %s: %v\n", f.Dir, err)
		} else {
			fmt.Fprintf(os.Stderr, "faults: aborted the FUSE connection of %s\n", f.Dir)
		}
	}
}

// node is a loopback node that asks its FS before each call it can fail.
type node struct {
	*fs.LoopbackNode
	f *FS
}

// WrapChild makes every node the loopback creates (lookup, create, mkdir)
// one of ours.
func (n *node) WrapChild(ctx context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &node{LoopbackNode: ops.(*fs.LoopbackNode), f: n.f}
}

var (
	_ fs.NodeWrapChilder    = (*node)(nil)
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeMkdirer        = (*node)(nil)
	_ fs.NodeUnlinker       = (*node)(nil)
	_ fs.NodeRmdirer        = (*node)(nil)
	_ fs.NodeRenamer        = (*node)(nil)
	_ fs.NodeOpener         = (*node)(nil)
	_ fs.NodeOpendirHandler = (*node)(nil)
	_ fs.FileReader         = (*handle)(nil)
	_ fs.FileWriter         = (*handle)(nil)
	_ fs.FileWritever       = (*handle)(nil)
	_ fs.FileFsyncer        = (*handle)(nil)
	_ fs.FileFlusher        = (*handle)(nil)
	_ fs.FileReleaser       = (*handle)(nil)
	_ fs.FileGetattrer      = (*handle)(nil)
	_ fs.FileSetattrer      = (*handle)(nil)
	_ fs.FileLseeker        = (*handle)(nil)
	_ fs.FileAllocater      = (*handle)(nil)
	_ fs.FileFsyncdirer     = (*dirHandle)(nil)
)

func (n *node) name() string {
	p := n.Path(nil)
	if p == "" {
		return "."
	}
	return filepath.Base(p)
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	errno, done := n.f.check(OpCreate, name)
	if errno != 0 && !done {
		return nil, nil, 0, errno
	}
	ch, fh, fl, e := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if e != 0 {
		return nil, nil, 0, e
	}
	if errno != 0 {
		fh.(fs.FileReleaser).Release(ctx)
		return nil, nil, 0, errno
	}
	return ch, n.f.newHandle(fh.(*fs.LoopbackFile), name), fl, 0
}

func (f *FS) newHandle(lf *fs.LoopbackFile, name string) *handle {
	h := &handle{lf: lf, name: name, f: f}
	f.opened(h, func() { lf.Release(context.Background()) })
	return h
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	name := n.name()
	errno, done := n.f.check(OpOpen, name)
	if errno != 0 && !done {
		return nil, 0, errno
	}
	fh, fl, e := n.LoopbackNode.Open(ctx, flags)
	if e != 0 {
		return nil, 0, e
	}
	if errno != 0 {
		fh.(fs.FileReleaser).Release(ctx)
		return nil, 0, errno
	}
	return n.f.newHandle(fh.(*fs.LoopbackFile), name), fl, 0
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fl, e := n.LoopbackNode.OpendirHandle(ctx, flags)
	if e != 0 {
		return nil, 0, e
	}
	d := &dirHandle{dirStream: fh.(dirStream), name: n.name(), f: n.f}
	n.f.opened(d, func() { d.dirStream.Releasedir(context.Background(), 0) })
	return d, fl, 0
}

// around runs call unless the rule for op on name says to fail first.
func (f *FS) around(op Op, name string, call func() syscall.Errno) syscall.Errno {
	errno, done := f.check(op, name)
	if errno != 0 && !done {
		return errno
	}
	if e := call(); e != 0 {
		return e
	}
	return errno
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	var ch *fs.Inode
	e := n.f.around(OpMkdir, name, func() (e syscall.Errno) {
		ch, e = n.LoopbackNode.Mkdir(ctx, name, mode, out)
		return e
	})
	if e != 0 {
		return nil, e
	}
	return ch, 0
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	return n.f.around(OpUnlink, name, func() syscall.Errno { return n.LoopbackNode.Unlink(ctx, name) })
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	return n.f.around(OpRmdir, name, func() syscall.Errno { return n.LoopbackNode.Rmdir(ctx, name) })
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	return n.f.around(OpRename, name, func() syscall.Errno {
		return n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
	})
}

// handle is an open file. It forwards the calls it lists and no others:
// in particular no lock calls (the kernel keeps locks) and no passthrough
// descriptor (reads and writes would bypass the layer).
type handle struct {
	lf   *fs.LoopbackFile
	name string
	f    *FS
}

func (h *handle) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if errno, _ := h.f.check(OpRead, h.name); errno != 0 {
		return nil, errno
	}
	return h.lf.Read(ctx, buf, off)
}

func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	var n uint32
	e := h.f.around(OpWrite, h.name, func() (e syscall.Errno) {
		n, e = h.lf.Write(ctx, data, off)
		return e
	})
	if e != 0 {
		return 0, e
	}
	return n, 0
}

func (h *handle) Writev(ctx context.Context, data [][]byte, off int64) (uint32, syscall.Errno) {
	var n uint32
	e := h.f.around(OpWrite, h.name, func() (e syscall.Errno) {
		n, e = h.lf.Writev(ctx, data, off)
		return e
	})
	if e != 0 {
		return 0, e
	}
	return n, 0
}

func (h *handle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	return h.f.around(OpFsync, h.name, func() syscall.Errno { return h.lf.Fsync(ctx, flags) })
}

func (h *handle) Flush(ctx context.Context) syscall.Errno { return h.lf.Flush(ctx) }
func (h *handle) Release(ctx context.Context) syscall.Errno {
	h.f.released(h)
	return h.lf.Release(ctx)
}
func (h *handle) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return h.lf.Getattr(ctx, out)
}
func (h *handle) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return h.lf.Setattr(ctx, in, out)
}
func (h *handle) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	return h.lf.Lseek(ctx, off, whence)
}
func (h *handle) Allocate(ctx context.Context, off uint64, size uint64, mode uint32) syscall.Errno {
	return h.lf.Allocate(ctx, off, size, mode)
}

// dirStream is what the loopback's directory handle offers.
type dirStream interface {
	fs.FileReaddirenter
	fs.FileSeekdirer
	fs.FileReleasedirer
	fs.FileFsyncdirer
}

// dirHandle is an open directory; only its fsync can fail.
type dirHandle struct {
	dirStream
	name string
	f    *FS
}

func (d *dirHandle) Releasedir(ctx context.Context, flags uint32) {
	d.f.released(d)
	d.dirStream.Releasedir(ctx, flags)
}

func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	return d.f.around(OpFsyncDir, d.name, func() syscall.Errno { return d.dirStream.Fsyncdir(ctx, flags) })
}
