//go:build linux && !exactfs_portable

package exactfs

import (
	"fmt"

	"github.com/exactfs/exactfs/internal/sys"
)

// probeWaker makes the waker a lock waiter makes for every wait (an
// inotify instance, statelock's wake.NewWatch), watches the probe
// directory with it (through /proc/self/fd, so the very directory tfd is
// open on), creates a file there with create, and reads the event without
// waiting: inotify queues it before the creating call returns.
func probeWaker(tfd int, create func(name string) error) (string, ProbeResult) {
	ifd, err := sys.InotifyInit()
	if err != nil {
		return "timed backoff", ProbeResult{false, "inotify_init1 failed: " + errnoText(err)}
	}
	defer sys.Close(ifd)
	if _, err := sys.InotifyAddWatch(ifd, fmt.Sprintf("/proc/self/fd/%d", tfd), sys.InCreate|sys.InOnlyDir); err != nil {
		return "inotify", ProbeResult{false, "inotify_init1 works, but watching this directory failed: " + errnoText(err)}
	}
	const n = "woken"
	if err := create(n); err != nil {
		return "inotify", ProbeResult{false, "could not create a probe file: " + errnoText(err)}
	}
	buf := make([]byte, 4096)
	got, err := sys.InotifyReadNow(ifd, buf)
	if err != nil {
		return "inotify", ProbeResult{false, "reading the inotify instance failed: " + errnoText(err)}
	}
	for b := buf[:got]; ; {
		_, mask, name, rest, ok := sys.NextInotifyEvent(b)
		if !ok {
			break
		}
		if mask&sys.InCreate != 0 && string(name) == n {
			return "inotify", ProbeResult{true, "inotify_init1 works, and a file created here woke the watch at once"}
		}
		b = rest
	}
	return "inotify", ProbeResult{false, "inotify_init1 works, but a file created here made no event (a filesystem whose changes inotify does not see)"}
}
