package statelock

import (
	"bytes"
	"context"
	"errors"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// waker sleeps between attempts but wakes early when the owner record
// changes. It watches the lock's directory with inotify for the events a
// release produces on F.lock (the holder closes its written descriptor after
// rewriting the tombstone; a reclaim deletes or renames the name). Events on
// other names (other claims, the state file's own staging) do not wake it,
// so waiters do not wake each other in a storm.
//
// The watch is an optimization only: every sleep is still bounded by the
// backoff, so a missed or coalesced event costs at most 100 ms.
type waker struct {
	f    *os.File
	name []byte
}

// newWaker watches the directory dirPath for changes to name. It returns
// nil when inotify is unavailable (then waits are plain timed sleeps).
func newWaker(dirPath, name string) *waker {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	const mask = unix.IN_CLOSE_WRITE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
		unix.IN_CREATE | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW
	// IN_DONT_FOLLOW and IN_ONLYDIR: a symlink or a file at the path gets
	// no watch (the lock refuses such a directory anyway).
	if _, err := unix.InotifyAddWatch(fd, dirPath, mask); err != nil {
		unix.Close(fd)
		return nil
	}
	return &waker{f: os.NewFile(uintptr(fd), "inotify"), name: []byte(name)}
}

// wait sleeps for at most d, returning early (true) when the watched name
// changed, or with ctx's error when ctx is done.
func (w *waker) wait(ctx context.Context, d time.Duration) (bool, error) {
	if w == nil {
		return false, sleepCtx(ctx, d)
	}
	deadline := time.Now().Add(d)
	if err := w.f.SetReadDeadline(deadline); err != nil {
		return false, sleepCtx(ctx, d)
	}
	stop := context.AfterFunc(ctx, func() { w.f.SetReadDeadline(time.Now()) })
	defer stop()
	var buf [4096]byte
	for {
		n, err := w.f.Read(buf[:])
		if cerr := ctx.Err(); cerr != nil {
			return false, cerr
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return false, nil
		}
		if err != nil {
			// The watch broke; fall back to sleeping out the rest.
			return false, sleepCtx(ctx, time.Until(deadline))
		}
		if w.matches(buf[:n]) {
			return true, nil
		}
	}
}

// matches reports whether any event in buf names the watched entry.
func (w *waker) matches(buf []byte) bool {
	for len(buf) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[0]))
		end := unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(buf) {
			return false
		}
		name := bytes.TrimRight(buf[unix.SizeofInotifyEvent:end], "\x00")
		if ev.Mask&unix.IN_Q_OVERFLOW != 0 || bytes.Equal(name, w.name) {
			return true
		}
		buf = buf[end:]
	}
	return false
}

func (w *waker) close() {
	if w != nil {
		w.f.Close()
	}
}
