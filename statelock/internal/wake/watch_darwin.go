//go:build darwin && !exactfs_portable

package wake

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The kernel's numbers are the ones kqueue.go decides with (a constant
// expression that overflows fails to compile when they differ).
const (
	_ = uint16(kqFilterVnode-unix.EVFILT_VNODE) + uint16(unix.EVFILT_VNODE-kqFilterVnode)
	_ = uint16(kqFilterUser-unix.EVFILT_USER) + uint16(unix.EVFILT_USER-kqFilterUser)
	_ = uint16(kqEvError-unix.EV_ERROR) + uint16(unix.EV_ERROR-kqEvError)
	_ = uint16(kqEvEOF-unix.EV_EOF) + uint16(unix.EV_EOF-kqEvEOF)
	_ = uint32(kqNoteDelete-unix.NOTE_DELETE) + uint32(unix.NOTE_DELETE-kqNoteDelete)
	_ = uint32(kqNoteWrite-unix.NOTE_WRITE) + uint32(unix.NOTE_WRITE-kqNoteWrite)
	_ = uint32(kqNoteExtend-unix.NOTE_EXTEND) + uint32(unix.NOTE_EXTEND-kqNoteExtend)
	_ = uint32(kqNoteAttrib-unix.NOTE_ATTRIB) + uint32(unix.NOTE_ATTRIB-kqNoteAttrib)
	_ = uint32(kqNoteLink-unix.NOTE_LINK) + uint32(unix.NOTE_LINK-kqNoteLink)
	_ = uint32(kqNoteRename-unix.NOTE_RENAME) + uint32(unix.NOTE_RENAME-kqNoteRename)
	_ = uint32(kqNoteRevoke-unix.NOTE_REVOKE) + uint32(unix.NOTE_REVOKE-kqNoteRevoke)
)

// Watch is the macOS waker: kqueue EVFILT_VNODE on the inode F.lock names
// (opened O_EVTONLY, which neither counts as an open for writing nor keeps
// a volume from unmounting), or on its directory while the name is free.
// Which events wake, and what a wake that changed nothing does, is
// kqueue.go's (tested on Linux). As with inotify the watch is only an
// optimization: every sleep is bounded by the backoff.
type Watch struct {
	kq     int
	path   string
	dir    string
	fileFd int // -1: F.lock is not watched
	dirFd  int // -1: the directory is not watched
	seen   nameState

	// mu orders a context's trigger (which may still be running when Wait
	// has returned) before Close, so that it never reaches a closed kqueue
	// descriptor, or another file's that reused its number.
	mu     sync.Mutex
	closed bool
}

const cancelIdent = 1 // the EVFILT_USER event a context's end triggers

// NewWatch prepares a watch of dirPath/name; nil when off is set or the
// kernel gives no kqueue (then every wait is a timed sleep).
func NewWatch(dirPath, name string, off bool) *Watch {
	if off {
		return nil
	}
	kq, err := unix.Kqueue()
	if err != nil {
		return nil
	}
	unix.CloseOnExec(kq)
	var ch [1]unix.Kevent_t
	unix.SetKevent(&ch[0], cancelIdent, unix.EVFILT_USER, unix.EV_ADD|unix.EV_CLEAR)
	if _, err := unix.Kevent(kq, ch[:], nil, nil); err != nil {
		unix.Close(kq)
		return nil
	}
	return &Watch{kq: kq, path: dirPath + "/" + name, dir: dirPath, fileFd: -1, dirFd: -1}
}

func lookAt(path string) nameState {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return nameState{absent: true}
	}
	return nameState{dev: uint64(uint32(st.Dev)), ino: st.Ino, nlink: uint64(st.Nlink), mode: uint32(st.Mode),
		size: st.Size, mtime: unix.TimespecToNsec(st.Mtim), ctime: unix.TimespecToNsec(st.Ctim)}
}

// register adds an EVFILT_VNODE watch of fd (EV_CLEAR: each change is
// reported once).
func (w *Watch) register(fd int, mask uint32) error {
	var ch [1]unix.Kevent_t
	unix.SetKevent(&ch[0], fd, unix.EVFILT_VNODE, unix.EV_ADD|unix.EV_CLEAR)
	ch[0].Fflags = mask
	_, err := unix.Kevent(w.kq, ch[:], nil, nil)
	return err
}

func closeFd(fd *int) {
	if *fd >= 0 {
		unix.Close(*fd) // closing a descriptor drops its kevents
		*fd = -1
	}
}

// arm points the watch at the inode F.lock names now, or at the directory
// when the name is free (or names what cannot be opened without following
// it). It reports whether that changed: then the caller looks again, since
// nothing that happened before the new watch made an event for it.
func (w *Watch) arm() (changed bool) {
	now := lookAt(w.path)
	defer func() { w.seen = now }()
	if !now.absent && w.fileFd >= 0 && now.dev == w.seen.dev && now.ino == w.seen.ino {
		return false
	}
	closeFd(&w.fileFd)
	if !now.absent {
		fd, err := unix.Open(w.path, unix.O_EVTONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err == nil && w.register(fd, kqFileMask) == nil {
			w.fileFd = fd
			closeFd(&w.dirFd)
			return true
		}
		if err == nil {
			unix.Close(fd)
		}
	}
	if w.dirFd < 0 {
		fd, err := unix.Open(w.dir, unix.O_EVTONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return false
		}
		if w.register(fd, kqDirMask) != nil {
			unix.Close(fd)
			return false
		}
		w.dirFd = fd
		return true
	}
	return false
}

// Wait sleeps for at most d, returning early (true) when F.lock changed,
// or with ctx's error when ctx is done. first is inotify's distinction
// between the closes that wake a queued waiter; kqueue reports no closes,
// and there is no Go waiter queue here, so it is not used.
func (w *Watch) Wait(ctx context.Context, d time.Duration, first bool) (bool, error) {
	if w == nil {
		return false, Sleep(ctx, d)
	}
	if w.arm() {
		return true, nil
	}
	deadline := time.Now().Add(d)
	stop := context.AfterFunc(ctx, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.closed {
			return
		}
		var ch [1]unix.Kevent_t
		unix.SetKevent(&ch[0], cancelIdent, unix.EVFILT_USER, 0)
		ch[0].Fflags = unix.NOTE_TRIGGER
		unix.Kevent(w.kq, ch[:], nil, nil)
	})
	defer stop()
	var buf [8]unix.Kevent_t
	poll := func(left time.Duration) ([]kevent, error) {
		ts := unix.NsecToTimespec(left.Nanoseconds())
		n, err := unix.Kevent(w.kq, nil, buf[:], &ts)
		if err != nil {
			return nil, err
		}
		evs := make([]kevent, n)
		for i, e := range buf[:n] {
			evs[i] = kevent{Ident: e.Ident, Filter: e.Filter, Flags: e.Flags, Fflags: e.Fflags}
		}
		return evs, nil
	}
	return kqLoop(ctx, deadline, poll, w.fileFd, w.dirFd, func() nameState { return lookAt(w.path) }, w.seen)
}

func (w *Watch) Close() {
	if w != nil {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.closed = true
		closeFd(&w.fileFd)
		closeFd(&w.dirFd)
		unix.Close(w.kq)
	}
}
