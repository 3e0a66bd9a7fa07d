package statelock

import (
	"errors"
	"fmt"
	"os"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/sys"
)

// snapshot is one owner record as it was read: the exact bytes, the
// identity of the inode they came from (one descriptor, fstat before and
// after the read), and the record they parse to (nil when malformed).
type snapshot struct {
	data []byte
	id   exactfs.Identity
	rec  *Record
	perr error
}

func newSnapshot(data []byte, id exactfs.Identity) *snapshot {
	s := &snapshot{data: data, id: id}
	s.rec, s.perr = ParseRecord(data)
	return s
}

func (s *snapshot) released() bool { return s.rec != nil && s.rec.Released }

// sameRecord reports whether two identities name the same inode incarnation
// with the same bytes: dev, ino, nlink, size, mtime and digest. This is the
// reference's test that "the record I judged is the record I am about to
// act on"; ctime is left out because a rename of a neighbour can touch it.
func sameRecord(a, b exactfs.Identity) bool {
	return a.SameContent(b) && a.Nlink == b.Nlink
}

// unsafeType reports whether err says the path holds something that is not
// a regular file where one was expected (a symlink, FIFO, socket, device):
// not a lock anyone wrote.
func unsafeType(err error) bool {
	return errors.Is(err, exactfs.ErrReparsePoint) || errors.Is(err, exactfs.ErrNotRegularFile)
}

// openCapture opens name read-only (no-follow, non-blocking, type proved
// by fstat) and captures its bytes and identity through that descriptor.
// The descriptor is returned open so that a kernel-lock test can be asked
// about the very inode the bytes came from; the caller closes it.
func (l *locker) openCapture(name string) (*os.File, *snapshot, error) {
	// One fstat both proves the descriptor regular and starts the capture.
	f, data, id, err := l.dir.OpenCaptureRecord(name, os.O_RDONLY)
	if err != nil {
		return nil, nil, err
	}
	return f, newSnapshot(data, id), nil
}

// capture is openCapture without keeping the descriptor.
func (l *locker) capture(name string) (*snapshot, error) {
	data, id, err := l.dir.CaptureRecord(name)
	if err != nil {
		return nil, err
	}
	return newSnapshot(data, id), nil
}

// Bounds of captureTree's look before the capture.
const (
	treeLookEntries = 256
	treeLookDepth   = 8
)

// captureTree is exactfs's CaptureTree for the trees the lock judges (a
// claim directory, a legacy F.lock/ directory, a detached one), which
// hashes every file it holds: it first looks at the tree without reading
// a byte (names and lstat sizes, at most treeLookEntries entries and
// treeLookDepth levels), and refuses a tree holding a file larger than
// exactfs.RecordCap, or more entries than that, with record_too_large
// (nothing the protocol makes is like that), so that a planted gigabyte is
// never read. The capture remains the proof; the look only refuses early.
func (l *locker) captureTree(name string) (*exactfs.Tree, error) {
	var what string
	l.dir.Use(func(dirfd int) error { what = l.oversized(dirfd, name, 0, new(int)); return nil })
	if what != "" {
		return nil, &exactfs.Error{Op: "capture tree", Path: l.path(name), Code: exactfs.CodeRecordTooLarge,
			Detail: what + "; no lock directory holds that, so nothing of it was read: check it and remove it by hand"}
	}
	return l.dir.CaptureTree(name)
}

// oversized describes the first thing under name (beneath dirfd) that
// captureTree refuses, or "" (also when the look itself fails: the
// capture then says why).
func (l *locker) oversized(dirfd int, name string, depth int, seen *int) string {
	st, err := sys.Lstat(dirfd, name)
	if err != nil {
		return ""
	}
	if *seen++; *seen > treeLookEntries {
		return fmt.Sprintf("it holds more than %d entries", treeLookEntries)
	}
	if st.Mode.IsRegular() && st.Size > exactfs.RecordCap {
		return fmt.Sprintf("it holds %s, a file of %d bytes", name, st.Size)
	}
	if !st.Mode.IsDir() || depth >= treeLookDepth {
		return ""
	}
	fd, err := sys.OpenDir(dirfd, name)
	if err != nil {
		return ""
	}
	defer sys.Close(fd)
	names, err := sys.ReadDirNames(fd)
	if err != nil {
		return ""
	}
	for _, n := range names {
		if what := l.oversized(fd, n, depth+1, seen); what != "" {
			return what
		}
	}
	return ""
}
