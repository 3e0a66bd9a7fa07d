package statelock

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
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
	f, err := l.dir.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, nil, err
	}
	data, id, err := exactfs.CaptureFile(f)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, newSnapshot(data, id), nil
}

// capture is openCapture without keeping the descriptor.
func (l *locker) capture(name string) (*snapshot, error) {
	data, id, err := l.dir.Capture(name)
	if err != nil {
		return nil, err
	}
	return newSnapshot(data, id), nil
}

// heldRecord is an owner record this process wrote and holds: the open
// read-write descriptor (which carries the OFD lock, so the kernel vouches
// for us while it is open) and the identity of the bytes we wrote.
type heldRecord struct {
	name string
	f    *os.File
	id   exactfs.Identity // for a sidecar taken by reuseReleased, only Dev and Ino
	data []byte
	rec  *Record
}

// createRecord takes name with an exclusive create and writes rec into it.
//
// The OFD lock is taken on the creating descriptor before any byte is
// written: a record that carries our kernel evidence fields is then never
// visible without the lock that backs them. If the write fails, the record
// is retracted only while the creating descriptor is still open and the
// pathname still names that same inode: after a fault the
// pathname may already belong to a successor, which must keep it.
//
// An EEXIST from the create comes back unchanged so callers can tell
// contention from failure.
func (l *locker) createRecord(name string, rec *Record) (*heldRecord, error) {
	if fault(hook.LockCreateInPlace, l.path(name)) == nil {
		h, err := l.publishRecord(name, rec)
		if !errors.Is(err, exactfs.ErrAtomicUnavailable) {
			return h, err
		}
	}
	return l.createInPlace(name, rec)
}

// publishRecord creates the record whole: under a private staging name it
// is created, locked (OFD) and written, and only then given its name by a
// no-replace rename. So no process ever sees our record empty or torn,
// and a holder killed at any instant leaves either no record or a whole
// one whose kernel lock dies with it; nothing that only a person could
// clear. (A record created in place, as the reference does, is empty
// between the create and the write: a kill there leaves a malformed record
// that no rule may reclaim.) The rename is not fsynced: see the package
// documentation. Where the filesystem has no no-replace rename this
// returns atomic_unavailable and the caller creates in place.
func (l *locker) publishRecord(name string, rec *Record) (*heldRecord, error) {
	// Nearly always the name exists (a tombstone to reuse): say so at the
	// cost of one lstat, before staging anything.
	if _, err := l.dir.Lstat(name); !errors.Is(err, fs.ErrNotExist) {
		if err == nil {
			err = &fs.PathError{Op: "create", Path: l.path(name), Err: syscall.EEXIST}
		}
		return nil, err
	}
	stage := "." + name + "." + exactfs.NewUUID() + ".staging"
	f, err := l.dir.OpenFile(stage, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	rec, data, err := l.writeFresh(f, name, rec)
	var id exactfs.Identity
	if err == nil {
		id, err = writtenIdentity(f, data)
	}
	if err == nil {
		_, err = l.dir.RenameNoReplace(stage, name)
	}
	if err == nil {
		// The name must now be our inode (the rename moved exactly it).
		var fi fs.FileInfo
		if fi, err = l.dir.Lstat(name); err == nil {
			if at, ok := fi.Sys().(exactfs.Identity); !ok || !at.SameInode(id) {
				err = fmt.Errorf("%w: %s is not the record we published", errRecordChanged, l.path(name))
			} else {
				id.CtimeNs = at.CtimeNs
			}
		}
		if err == nil {
			return &heldRecord{name: name, f: f, id: id, data: data, rec: rec}, nil
		}
		f.Close()
		return nil, err
	}
	// Not published: remove our staged file, which nobody else can know.
	if _, sid, cerr := exactfs.CaptureFile(f); cerr == nil {
		l.dir.UnlinkExact(stage, sid, quarantineName())
	}
	f.Close()
	return nil, err
}

// writeFresh is the step both ways of creating a record share: take the
// OFD lock on f, a file we have just created (or the record without the
// kernel fields where there are no OFD locks), then write rec into it, with
// the hook and fault seams of that write. It returns the record as written.
func (l *locker) writeFresh(f *os.File, name string, rec *Record) (*Record, []byte, error) {
	rec, err := lockOrPlain(f, rec)
	if err != nil {
		return rec, nil, err
	}
	data := rec.Encode()
	hook.Fire(hook.LockOwnerRecordWrite, l.path(name))
	if err := fault(hook.LockOwnerRecordWrite, l.path(name)); err != nil {
		return rec, data, err
	}
	_, err = f.WriteAt(data, 0)
	return rec, data, err
}

// createInPlace is the reference's create: O_EXCL on the name itself, then
// the write, with the retraction rules of createRecord when the write fails.
func (l *locker) createInPlace(name string, rec *Record) (*heldRecord, error) {
	f, err := l.dir.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	_, created, err := exactfs.CaptureFile(f)
	var data []byte
	if err == nil {
		rec, data, err = l.writeFresh(f, name, rec)
	}
	var id exactfs.Identity
	if err == nil {
		var got []byte
		got, id, err = exactfs.CaptureFile(f)
		if err == nil && !bytes.Equal(got, data) {
			err = fmt.Errorf("owner record %s did not land as written", l.path(name))
		}
	}
	if err != nil {
		if rerr := l.retract(name, f, created); rerr != nil {
			err = errors.Join(err, fmt.Errorf("and its retraction failed: %w", rerr))
		}
		f.Close()
		return nil, err
	}
	return &heldRecord{name: name, f: f, id: id, data: data, rec: rec}, nil
}

// retract removes the record a failed write left, and only that record: f
// is still open on it (so its inode cannot have been recycled for a
// successor), and a fresh capture of the pathname must be that inode.
// Anything short of that proof leaves the pathname to the stale protocol.
func (l *locker) retract(name string, f *os.File, created exactfs.Identity) error {
	_, still, err := exactfs.CaptureFile(f)
	if err != nil || !still.SameInode(created) {
		return nil
	}
	cur, err := l.capture(name)
	if err != nil || !cur.id.SameInode(created) {
		return nil
	}
	err = l.dir.UnlinkExact(name, cur.id, quarantineName())
	if errors.Is(err, exactfs.ErrNotFound) || errors.Is(err, exactfs.ErrIdentityMismatch) {
		return nil
	}
	return err
}

// quarantineName is the private name exact unlink detaches an owner record
// to; TypeScript peers skip it when they scan the directory.
func quarantineName() string {
	return ".gjc-delete-session-state-lock-" + exactfs.NewUUID() + ".json"
}

// reuseTombstone takes a released record in place: the next owner reuses
// the inode. It opens the pathname read-write without following
// links, takes the OFD lock first (a conflict means some exactfs process
// holds the inode right now), proves through the same descriptor that the
// bytes are still exactly the tombstone that was judged, and rewrites.
func (l *locker) reuseTombstone(name string, judged *snapshot, rec *Record) (*heldRecord, error) {
	f, err := l.dir.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	rec, err = lockOrPlain(f, rec)
	if err != nil {
		f.Close()
		return nil, err
	}
	data := rec.Encode()
	id, err := l.rewrite(name, f, judged.id, judged.data, data, false)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &heldRecord{name: name, f: f, id: id, data: data, rec: rec}, nil
}

// errRecordChanged means the record at a name is no longer the one a
// decision was made from; whatever is there now is left alone.
var errRecordChanged = errors.New("owner record changed")

// rewrite replaces the bytes of the record f is open on, in place: the
// bytes and identity read through f must equal want; truncate, write,
// truncate to length; then the pathname must still name the same inode with
// exactly the new bytes. A write that fails half way puts the
// old bytes back through the same descriptor.
//
// There is deliberately no fsync: see the package documentation.
//
// checked says the caller captured want through f itself a moment ago, so
// the bytes need not be read again first.
func (l *locker) rewrite(name string, f *os.File, want exactfs.Identity, old, data []byte, checked bool) (exactfs.Identity, error) {
	if !checked {
		_, cur, err := exactfs.CaptureFile(f)
		if err != nil {
			return exactfs.Identity{}, err
		}
		if !sameRecord(cur, want) {
			return exactfs.Identity{}, fmt.Errorf("%w before rewrite: %s", errRecordChanged, l.path(name))
		}
	}
	// want.Size is the size of the inode now: proved through f just above,
	// or by the caller's capture (checked), and nobody writes into it in
	// between (every in-place writer of a record holds the claim, and of
	// the sidecar also its OFD lock).
	if err := overwrite(f, l.path(name), want.Size, old, data); err != nil {
		return exactfs.Identity{}, err
	}
	// The inode f is open on holds exactly data: every in-place writer of a
	// record (exactfs and the reference alike) holds the claim, which is
	// ours, and a base writer only ever creates a new inode; so one fstat
	// gives the identity (writtenIdentity) without reading our own bytes
	// back. The pathname must still name that inode (lstat): a base writer
	// may have replaced the name, never the bytes.
	id, err := writtenIdentity(f, data)
	if err != nil {
		return exactfs.Identity{}, fmt.Errorf("%w after rewrite: %s: %w", errRecordChanged, l.path(name), err)
	}
	if err := l.stillNames(name, id); err != nil {
		return exactfs.Identity{}, err
	}
	return id, nil
}

// stillNames checks, after an in-place write, that name still names the
// inode of id (an lstat).
func (l *locker) stillNames(name string, id exactfs.Identity) error {
	fi, err := l.dir.Lstat(name)
	if err != nil {
		return fmt.Errorf("%w after rewrite: %s: %w", errRecordChanged, l.path(name), err)
	}
	if at, ok := fi.Sys().(exactfs.Identity); !ok || !at.SameInode(id) {
		return fmt.Errorf("%w after rewrite: %s now names another record", errRecordChanged, l.path(name))
	}
	return nil
}

// overwrite makes data the content of f, whose current size is size (< 0:
// unknown), putting old back if the write fails half way. It is rewrite
// without rewrite's proofs, for callers that make the proofs they need
// themselves: the sidecar of a claim we hold, which nobody else writes,
// renames or removes meanwhile (reuseReleased, releaseClaim), and the
// release of F.lock (releaseRecord).
func overwrite(f *os.File, path string, size int64, old, data []byte) error {
	if err := writeAll(f, path, data, size); err != nil {
		if rerr := writeAll(f, path, old, -1); rerr != nil {
			err = errors.Join(err, fmt.Errorf("restoring the previous bytes also failed: %w", rerr))
		}
		return err
	}
	return nil
}

// provenAt proves that name names the inode f is open on (want's) and that
// this inode holds exactly data: the bytes and identity are read through f,
// then an lstat of name must show the same inode. It returns the identity.
func (l *locker) provenAt(name string, f *os.File, want exactfs.Identity, data []byte) (exactfs.Identity, error) {
	got, id, err := readHeld(f)
	if err != nil {
		return exactfs.Identity{}, err
	}
	if !id.SameInode(want) || !bytes.Equal(got, data) {
		return exactfs.Identity{}, errors.New("the inode no longer holds the bytes written")
	}
	fi, err := l.dir.Lstat(name)
	if err != nil {
		return exactfs.Identity{}, err
	}
	if at, ok := fi.Sys().(exactfs.Identity); !ok || !at.SameInode(id) {
		return exactfs.Identity{}, errors.New("it now names another record")
	}
	return id, nil
}

// writeAll makes data the whole content of f: write at offset 0, then cut
// the file to that length (one system call fewer than the reference's
// truncate, write, truncate; no cut when data is at least as long as what
// it replaces, as an owner record over a tombstone is). Where the old
// content is longer, the new bytes are followed by spaces up to its length:
// JSON parsers on both sides accept trailing white space, so a holder
// killed between the write and the truncate leaves a whole, valid record,
// never the new bytes followed by a torn tail of the old ones, which no
// rule could ever reclaim. After the truncate the bytes are exactly data.
//
// size is the current size of f, as proved by the caller; < 0: unknown,
// then f is stat'ed. path names the record, for the hook (f's own name may
// be the staging name it was created under).
func writeAll(f *os.File, path string, data []byte, size int64) error {
	if size < 0 {
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		size = fi.Size()
	}
	if _, err := f.WriteAt(padTo(data, size), 0); err != nil {
		return err
	}
	hook.Fire(hook.LockRewriteBeforeTruncate, path)
	if int64(len(data)) >= size {
		return nil // the write replaced every byte and set the length
	}
	return f.Truncate(int64(len(data)))
}

// padTo returns data followed by spaces up to size bytes.
func padTo(data []byte, size int64) []byte {
	if size <= int64(len(data)) {
		return data
	}
	buf := make([]byte, size)
	copy(buf, data)
	for i := len(data); i < len(buf); i++ {
		buf[i] = ' '
	}
	return buf
}

// reuseSidecar is the fast path of taking the claim's sidecar, which is
// nearly always a released tombstone: see reuseReleased. A conflict on the
// sidecar's kernel lock is nearly always the previous taker between its
// rmdir and the moment it drops its lock (a few microseconds), so it looks
// again briefly before calling the claim busy.
func (l *locker) reuseSidecar(rec *Record) (h *heldRecord, ok bool, err error) {
	return l.reuseReleased(l.sidecar, rec, 3)
}

// reuseReleased takes the released tombstone at name in place with one
// descriptor: a parked one on the inode name names (park.go), else name
// opened read-write (no-follow, type proved regular by fstat); take the OFD
// lock (a conflict is a live exactfs holder), capture through that
// descriptor and, if it is a tombstone, rewrite it in place. ok is false
// when name holds anything else, or anything fails before a byte is
// written; nothing was changed then, and the caller goes through
// takeRecord's full path, which judges what is there.
//
// This is reuseTombstone's proof in one descriptor instead of two: the
// bytes and identity judged (a tombstone) are read through the descriptor
// that already holds the OFD lock, so they are exactly what rewrite
// replaces; the separate read-only judgement before it proved nothing more.
// Only a tombstone is ever written; any other record is never judged here,
// so the kernel lock we held on it for a moment (which made peeking exactfs
// waiters see a live holder, the safe side) is dropped by the close.
//
// The sidecar is written without rewrite's proofs after the write (an
// fstat for the new identity, an lstat that the name still names the
// inode): we hold the claim directory, made moments ago, and the sidecar's
// OFD lock, and the name was bound to the inode just before (the open, or
// takeParked's lstat). Every taker of a claim needs the directory, and a
// reclaimer acts only on a claim at least claimMinAge old whose sidecar
// nobody holds a lock on; so no peer writes, renames or removes the sidecar
// while we hold the claim, and nothing is ever proved against the sidecar's
// identity (the record's id keeps only the inode, which releaseClaim parks).
func (l *locker) reuseReleased(name string, rec *Record, retries int) (h *heldRecord, ok bool, err error) {
	f := l.takeParked(name)
	if f == nil {
		if f, err = l.dir.OpenFile(name, os.O_RDWR, 0); err != nil {
			if unsafeType(err) && name == l.sidecar {
				return nil, false, &unsafeError{err}
			}
			return nil, false, nil
		}
	}
	for try := 0; ; try++ {
		rec2, lerr := lockOrPlain(f, rec)
		if lerr == nil {
			rec = rec2
			break
		}
		if !errors.Is(lerr, errOFDConflict) || try >= retries {
			f.Close()
			return nil, false, nil
		}
		time.Sleep(50 * time.Microsecond)
	}
	old, id, err := readHeld(f)
	if err != nil {
		ofdUnlock(f)
		f.Close()
		return nil, false, nil
	}
	if s := newSnapshot(old, id); !s.released() {
		ofdUnlock(f)
		f.Close()
		return nil, false, nil
	}
	data := rec.Encode()
	if name == l.sidecar {
		if err := overwrite(f, l.path(name), id.Size, old, data); err != nil {
			ofdUnlock(f)
			f.Close()
			return nil, false, nil
		}
		return &heldRecord{name: name, f: f, id: exactfs.Identity{Dev: id.Dev, Ino: id.Ino}, data: data, rec: rec}, true, nil
	}
	nid, err := l.rewrite(name, f, id, old, data, true)
	if err != nil {
		f.Close()
		// Bytes were written: report it as reuseTombstone would, so that
		// takeRecord decides exactly as on its full path.
		return nil, true, err
	}
	return &heldRecord{name: name, f: f, id: nid, data: data, rec: rec}, true, nil
}

// lockOrPlain takes the OFD lock on f for rec. Where the filesystem takes
// no OFD locks, the record is written without the kernel evidence fields:
// a record that claims a kernel lock it does not hold would read as dead to
// every contender whose F_OFD_GETLK answers, so it must not claim one.
func lockOrPlain(f *os.File, rec *Record) (*Record, error) {
	err := ofdLock(f)
	if errors.Is(err, errOFDUnsupported) {
		plain := *rec
		plain.PidfdIno, plain.PidNS, plain.BootID = 0, 0, ""
		return &plain, nil
	}
	return rec, err
}
