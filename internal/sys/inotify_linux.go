//go:build !exactfs_portable

package sys

import (
	"bytes"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The inotify event bits exactfs watches for (inotify(7)).
const (
	InMoveSelf     = unix.IN_MOVE_SELF
	InDeleteSelf   = unix.IN_DELETE_SELF
	InAttrib       = unix.IN_ATTRIB
	InDontFollow   = unix.IN_DONT_FOLLOW
	InCloseWrite   = unix.IN_CLOSE_WRITE
	InCloseNowrite = unix.IN_CLOSE_NOWRITE
	InCreate       = unix.IN_CREATE
	InMovedTo      = unix.IN_MOVED_TO
	InOnlyDir      = unix.IN_ONLYDIR
	InQOverflow    = unix.IN_Q_OVERFLOW
	InIgnored      = unix.IN_IGNORED
)

// InotifyInit makes a non-blocking, close-on-exec inotify instance.
func InotifyInit() (int, error) { return unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC) }

// InotifyReadNow reads the events queued on the inotify instance fd into
// buf without waiting: 0 when none is queued.
func InotifyReadNow(fd int, buf []byte) (n int, err error) {
	err = retry(func() (err error) { n, err = unix.Read(fd, buf); return err })
	if err == unix.EAGAIN {
		return 0, nil
	}
	return n, err
}

// InotifyAddWatch adds or replaces the watch of path on the inotify
// instance fd and returns its watch descriptor. The errno is returned
// unchanged.
func InotifyAddWatch(fd int, path string, mask uint32) (int, error) {
	var wd int
	err := retry(func() (err error) {
		wd, err = unix.InotifyAddWatch(fd, path, mask)
		return err
	})
	return wd, err
}

// InotifyRmWatch removes the watch wd from the inotify instance fd.
func InotifyRmWatch(fd, wd int) error {
	_, err := unix.InotifyRmWatch(fd, uint32(wd))
	return err
}

// NextInotifyEvent parses the first event of buf, as read from an inotify
// instance: its watch descriptor, mask and name (NUL padding removed), and
// the rest of buf. ok is false when buf holds no whole event.
func NextInotifyEvent(buf []byte) (wd int, mask uint32, name, rest []byte, ok bool) {
	if len(buf) < unix.SizeofInotifyEvent {
		return 0, 0, nil, nil, false
	}
	ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[0]))
	end := unix.SizeofInotifyEvent + int(ev.Len)
	if end > len(buf) {
		return 0, 0, nil, nil, false
	}
	name = bytes.TrimRight(buf[unix.SizeofInotifyEvent:end], "\x00")
	return int(ev.Wd), ev.Mask, name, buf[end:], true
}
