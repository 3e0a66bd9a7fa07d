package statelock

import (
	"errors"
	"os"

	"github.com/exactfs/exactfs"
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
// hashes every file it holds, within the bounds of its look
// (Dir.CaptureTreeWithin: at most treeLookEntries entries and
// treeLookDepth levels, no file larger than exactfs.RecordCap; nothing the
// protocol makes is like that): a larger tree is refused with
// record_too_large, so that a planted gigabyte is never read.
func (l *locker) captureTree(name string) (*exactfs.Tree, error) {
	return l.dir.CaptureTreeWithin(name, exactfs.TreeLimits{Entries: treeLookEntries, Depth: treeLookDepth, FileSize: exactfs.RecordCap})
}
