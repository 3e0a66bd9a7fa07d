//go:build darwin && !exactfs_portable

package exactfs

import (
	"golang.org/x/sys/unix"

	"github.com/exactfs/exactfs/internal/sys"
)

// probeWaker makes the waker a lock waiter makes on macOS (a kqueue,
// statelock's wake.NewWatch), watches the probe directory with
// EVFILT_VNODE through a descriptor opened O_EVTONLY as the waiter opens
// it, creates a file there with create, and collects the event without
// waiting: the kernel posts it before the creating call returns.
func probeWaker(tfd int, create func(name string) error) (string, ProbeResult) {
	kq, err := unix.Kqueue()
	if err != nil {
		return "timed backoff", ProbeResult{false, "kqueue failed: " + errnoText(err)}
	}
	defer unix.Close(kq)
	fd, err := unix.Openat(tfd, ".", unix.O_EVTONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "kqueue", ProbeResult{false, "kqueue works, but opening this directory for events failed: " + errnoText(err)}
	}
	defer sys.Close(fd)
	var ch [1]unix.Kevent_t
	unix.SetKevent(&ch[0], fd, unix.EVFILT_VNODE, unix.EV_ADD|unix.EV_CLEAR)
	ch[0].Fflags = unix.NOTE_WRITE
	if _, err := unix.Kevent(kq, ch[:], nil, nil); err != nil {
		return "kqueue", ProbeResult{false, "kqueue works, but watching this directory (EVFILT_VNODE) failed: " + errnoText(err)}
	}
	if err := create("woken"); err != nil {
		return "kqueue", ProbeResult{false, "could not create a probe file: " + errnoText(err)}
	}
	var ev [1]unix.Kevent_t
	n, err := unix.Kevent(kq, nil, ev[:], &unix.Timespec{})
	switch {
	case err != nil:
		return "kqueue", ProbeResult{false, "collecting the event failed: " + errnoText(err)}
	case n == 1 && ev[0].Filter == unix.EVFILT_VNODE && ev[0].Fflags&unix.NOTE_WRITE != 0:
		return "kqueue", ProbeResult{true, "kqueue EVFILT_VNODE: a file created here woke the watch at once"}
	}
	return "kqueue", ProbeResult{false, "kqueue works, but a file created here made no EVFILT_VNODE event"}
}
