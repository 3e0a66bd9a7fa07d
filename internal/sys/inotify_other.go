//go:build !linux || exactfs_portable

package sys

// There is no inotify here: InotifyInit fails with ErrUnsupported, so no
// watch is ever added and the event bits, all zero, match nothing.
const (
	InMoveSelf     = 0
	InDeleteSelf   = 0
	InAttrib       = 0
	InDontFollow   = 0
	InCloseWrite   = 0
	InCloseNowrite = 0
	InCreate       = 0
	InMovedTo      = 0
	InOnlyDir      = 0
	InQOverflow    = 0
	InIgnored      = 0
)

// InotifyInit: no inotify here.
func InotifyInit() (int, error) { return -1, ErrUnsupported }

// InotifyReadNow: no inotify here.
func InotifyReadNow(fd int, buf []byte) (int, error) { return 0, ErrUnsupported }

// InotifyAddWatch: no inotify here.
func InotifyAddWatch(fd int, path string, mask uint32) (int, error) { return -1, ErrUnsupported }

// InotifyRmWatch: no inotify here.
func InotifyRmWatch(fd, wd int) error { return ErrUnsupported }

// NextInotifyEvent: there are no events here to parse.
func NextInotifyEvent(buf []byte) (wd int, mask uint32, name, rest []byte, ok bool) {
	return 0, 0, nil, nil, false
}
