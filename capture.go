package exactfs

import (
	"crypto/sha256"
	"fmt"
	"os"

	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/internal/sys"
)

// Capture reads the regular file at path and proves what it read: the bytes
// and the identity come from one no-follow, non-blocking descriptor, with
// the identity taken before and after the read. If the two differ, or the
// size is not the number of bytes read, the file changed during the read
// and Capture returns ErrChangedDuringRead with no data. A symlink, FIFO,
// socket or device at path is refused without blocking.
func Capture(path string) ([]byte, Identity, error) { return capture(nil, path) }

// Capture reads name beneath d; see Capture.
func (d *Dir) Capture(name string) ([]byte, Identity, error) { return capture(d, name) }

func capture(d *Dir, name string) ([]byte, Identity, error) {
	p, base, err := resolve("capture", d, name)
	if err != nil {
		return nil, Identity{}, err
	}
	defer p.close()
	return captureAt("capture", d.join(name), p.fd, base, true)
}

// CaptureReplaceable is Capture of name beneath d for a caller that will
// replace it (a read-modify-write): a file that WriteFile would refuse to
// replace because of its owner in a shared sticky directory (another
// uid's file there, planted perhaps, for any caller: see WriteFile) is
// refused with the error WriteFile would give, from the descriptor's own
// stat, before a byte of it is read. Without it the caller reads the file,
// perhaps a gigabyte another user planted, and computes its successor for
// nothing.
func (d *Dir) CaptureReplaceable(name string) ([]byte, Identity, error) {
	const op = "capture"
	p, base, err := resolve(op, d, name)
	if err != nil {
		return nil, Identity{}, err
	}
	defer p.close()
	path := d.join(name)
	fd, st, err := openRegular(op, path, p.fd, base, os.O_RDONLY, 0)
	if err != nil {
		return nil, Identity{}, err
	}
	defer sys.Close(fd)
	if err := replaceRefusal(op, path, p.fd, st); err != nil {
		return nil, Identity{}, err
	}
	return captureFrom(op, path, fd, true, st, -1)
}

// IdentityOf proves the identity of the regular file at path like Capture,
// hashing the bytes as they stream by instead of keeping them.
func IdentityOf(path string) (Identity, error) {
	p, base, err := resolve("identify", nil, path)
	if err != nil {
		return Identity{}, err
	}
	defer p.close()
	_, id, err := captureAt("identify", path, p.fd, base, false)
	return id, err
}

// IdentityOf proves the identity of name beneath d; see IdentityOf.
func (d *Dir) IdentityOf(name string) (Identity, error) {
	p, base, err := resolve("identify", d, name)
	if err != nil {
		return Identity{}, err
	}
	defer p.close()
	_, id, err := captureAt("identify", d.join(name), p.fd, base, false)
	return id, err
}

// captureAt is the one capture routine: every proof of a file's identity in
// exactfs comes from here or from captureFD.
func captureAt(op, path string, dirfd int, base string, keep bool) ([]byte, Identity, error) {
	return captureAtMax(op, path, dirfd, base, keep, -1)
}

// captureAtMax's system calls, each with what it gives: an lstat of the
// name (no proof: a courtesy that refuses a device or FIFO without opening
// it, see openRegular); the no-follow, non-blocking openat; one fstat that
// proves the descriptor's type, checks the size against max and is the
// "before" of the read; the pread(s); the fstat after, which proves the
// version unchanged during the read; close.
func captureAtMax(op, path string, dirfd int, base string, keep bool, max int64) ([]byte, Identity, error) {
	fd, st, err := openRegular(op, path, dirfd, base, os.O_RDONLY, 0)
	if err != nil {
		return nil, Identity{}, err
	}
	defer sys.Close(fd)
	if err := overCap(op, path, st, max); err != nil {
		return nil, Identity{}, err
	}
	return captureFrom(op, path, fd, keep, st, max)
}

// RecordCap is the size cap of a small record: every on-disk record that
// exactfs and its packages parse (the state lock's owner records, claim
// sidecars and legacy info files, the liveness engine's records, the
// store's lease records) is read with CaptureRecord / CaptureRecordFile,
// which refuse a file larger than this before reading a byte of it. The
// protocols' records are under 1 KiB; 4 KiB leaves room for extra keys a
// future writer adds, and is still one page: a record file of a gigabyte
// (sparse: it costs its maker nothing) costs a reader one fstat, not a
// gigabyte of memory and a minute of reading.
const RecordCap = 4 << 10

// CodeRecordTooLarge: a file read as a record is larger than RecordCap.
// Nothing of it was read; it is no record any protocol writes.
const CodeRecordTooLarge Code = "record_too_large"

// ErrRecordTooLarge matches every *Error with code record_too_large.
var ErrRecordTooLarge = Sentinel(CodeRecordTooLarge)

// CaptureRecord is Capture for a small record: a regular file larger than
// RecordCap is refused (record_too_large) after one fstat, with no read and
// no allocation of its size.
func (d *Dir) CaptureRecord(name string) ([]byte, Identity, error) {
	p, base, err := resolve("capture", d, name)
	if err != nil {
		return nil, Identity{}, err
	}
	defer p.close()
	return captureAtMax("capture", d.join(name), p.fd, base, true, RecordCap)
}

// OpenCaptureRecord opens the regular file name beneath d as OpenFile
// opens it (flag os.O_RDONLY or os.O_RDWR; no-follow, non-blocking, type
// proved from the descriptor) and captures it through the new descriptor
// as CaptureRecordFile would, returning the descriptor open: a caller that
// keeps it (to lock the inode its bytes came from, or to rewrite them in
// place) gets OpenFile and CaptureRecordFile in one. It costs one fstat
// fewer than the two: the fstat that proves the descriptor's type is also
// the capture's first fstat (its size checked against RecordCap, its
// version compared with the fstat after the read), since nothing runs
// between them. flag must not create, truncate or append: a record is
// read as it is.
func (d *Dir) OpenCaptureRecord(name string, flag int) (*os.File, []byte, Identity, error) {
	const op = "capture"
	path := d.join(name)
	if flag&(os.O_CREATE|os.O_TRUNC|os.O_APPEND|os.O_EXCL) != 0 {
		return nil, nil, Identity{}, &Error{Op: op, Path: path, Code: CodeInvalidRequest,
			Detail: "OpenCaptureRecord reads a record as it is: open it with os.O_RDONLY or os.O_RDWR, without O_CREATE, O_EXCL, O_TRUNC or O_APPEND"}
	}
	p, base, err := resolve(op, d, name)
	if err != nil {
		return nil, nil, Identity{}, err
	}
	defer p.close()
	fd, st, err := openRegular(op, path, p.fd, base, flag, 0)
	if err != nil {
		return nil, nil, Identity{}, err
	}
	if err := overCap(op, path, st, RecordCap); err != nil {
		sys.Close(fd)
		return nil, nil, Identity{}, err
	}
	data, id, err := captureFrom(op, path, fd, true, st, RecordCap)
	if err != nil {
		sys.Close(fd)
		return nil, nil, Identity{}, err
	}
	return os.NewFile(uintptr(fd), path), data, id, nil
}

// CaptureRecordFile is CaptureFile for a small record; see CaptureRecord.
func CaptureRecordFile(f *os.File) ([]byte, Identity, error) {
	return captureFileMax(f, RecordCap)
}

// overCap refuses a file whose size (one fstat, before any read) is above
// max; max < 0 is no cap. The error says the size and where it is.
func overCap(op, path string, st sys.Stat, max int64) error {
	if max < 0 || st.Size <= max {
		return nil
	}
	if max != RecordCap {
		return &Error{Op: op, Path: path, Code: CodeRecordTooLarge,
			Detail: fmt.Sprintf("the file is %d bytes, more than the %d this capture reads; nothing of it was read", st.Size, max)}
	}
	return &Error{Op: op, Path: path, Code: CodeRecordTooLarge,
		Detail: fmt.Sprintf("the file is %d bytes, larger than any record (at most %d); nothing of it was read: "+
			"check what it is and remove it by hand", st.Size, max)}
}

// CaptureWithin is Capture of name beneath d for a caller with a byte
// budget, who judged the file's size on an lstat that another process
// can outrun (a file grown between that lstat and the capture): a file
// larger than max at the descriptor's fstat is refused with
// record_too_large before a byte of it is read, and one that grows past
// max while it is read fails with changed_during_read having read at most
// max+1 bytes, nothing further. max must be >= 0.
func (d *Dir) CaptureWithin(name string, max int64) ([]byte, Identity, error) {
	if max < 0 {
		return nil, Identity{}, &Error{Op: "capture", Path: d.join(name), Code: CodeInvalidRequest,
			Detail: fmt.Sprintf("CaptureWithin's cap is %d bytes: give a cap of 0 or more (Capture reads without one)", max)}
	}
	p, base, err := resolve("capture", d, name)
	if err != nil {
		return nil, Identity{}, err
	}
	defer p.close()
	return captureAtMax("capture", d.join(name), p.fd, base, true, max)
}

// CaptureFileWithin is CaptureFile with CaptureWithin's cap of max bytes.
func CaptureFileWithin(f *os.File, max int64) ([]byte, Identity, error) {
	if max < 0 {
		return nil, Identity{}, &Error{Op: "capture", Path: f.Name(), Code: CodeInvalidRequest,
			Detail: fmt.Sprintf("CaptureFileWithin's cap is %d bytes: give a cap of 0 or more (CaptureFile reads without one)", max)}
	}
	return captureFileMax(f, max)
}

// CaptureFile proves the identity of an open regular file, reading it from
// offset 0 without moving its offset.
func CaptureFile(f *os.File) ([]byte, Identity, error) { return captureFileMax(f, -1) }

func captureFileMax(f *os.File, max int64) ([]byte, Identity, error) {
	var data []byte
	var id Identity
	err := sys.Control(f, func(fd int) (err error) {
		data, id, err = captureFD("capture", f.Name(), fd, true, max)
		return err
	})
	if err != nil {
		return nil, Identity{}, wrap("capture", f.Name(), err)
	}
	return data, id, nil
}

func captureFD(op, path string, fd int, keep bool, max int64) ([]byte, Identity, error) {
	before, err := sys.Fstat(fd)
	if err != nil {
		return nil, Identity{}, wrap(op, path, err)
	}
	if !before.Mode.IsRegular() {
		return nil, Identity{}, typeError(op, path, before.Mode, "a regular file")
	}
	if err := overCap(op, path, before, max); err != nil {
		return nil, Identity{}, err
	}
	return captureFrom(op, path, fd, keep, before, max)
}

// captureFrom reads the regular file fd, whose fstat before the read is
// before, and brackets the read with a second fstat. max >= 0 caps the
// bytes read: a file that grows past it during the read changed during
// the read (its first fstat was within the cap, see overCap).
func captureFrom(op, path string, fd int, keep bool, before sys.Stat, max int64) ([]byte, Identity, error) {
	hook.Fire(hook.CaptureRead, path)
	h := sha256.New()
	// The buffer is the file's size, so that a big file costs its size in
	// memory, not the up to twice that growing by append would (a 1 GiB
	// capture peaked at 2.6 GB that way). Only past 16 GiB, a size no
	// record or state file has and a sparse plant costs nothing to fake,
	// does it grow as it is read instead of being asked for at once.
	var data []byte
	if keep && before.Size > 0 && before.Size <= 16<<30 {
		data = make([]byte, 0, before.Size)
	}
	// One read past the expected end proves EOF; a buffer sized to the
	// file keeps the capture of a 100-byte lock record cheap.
	buf := make([]byte, min(before.Size+512, 64<<10))
	var off int64
	for {
		b := buf
		if max >= 0 && int64(len(b)) > max+1-off {
			// One byte past the cap proves the growth: never more.
			b = b[:max+1-off]
		}
		n, err := sys.Pread(fd, b, off)
		if n > 0 {
			h.Write(buf[:n])
			if keep {
				data = append(data, buf[:n]...)
			}
			off += int64(n)
		}
		if err != nil {
			return nil, Identity{}, wrap(op, path, err)
		}
		if max >= 0 && off > max {
			return nil, Identity{}, &Error{Op: op, Path: path, Code: CodeChangedDuringRead,
				Detail: fmt.Sprintf("the file grew past %d bytes while it was read; nothing more of it was read; retry", max)}
		}
		// A short read that ends where the first fstat put the end is the
		// end: the second fstat proves the size (and version) unchanged, so
		// the read that would return 0 is not needed.
		if n == 0 || (n < len(b) && off == before.Size) {
			break
		}
	}
	after, err := sys.Fstat(fd)
	if err != nil {
		return nil, Identity{}, wrap(op, path, err)
	}
	if !sameVersion(before, after) || off != after.Size {
		what := fmt.Sprintf("%d bytes read, size %d before and %d after", off, before.Size, after.Size)
		if !sameVersion(before, after) {
			b, a := identityOf(before, [32]byte{}), identityOf(after, [32]byte{})
			b.CtimeNs, b.Mode = a.CtimeNs, a.Mode
			what = b.diff(a)
		}
		return nil, Identity{}, &Error{Op: op, Path: path, Code: CodeChangedDuringRead,
			Detail: "the file changed while it was read (" + what + "); retry"}
	}
	var sum [32]byte
	h.Sum(sum[:0])
	if keep && data == nil {
		data = []byte{}
	}
	return data, identityOf(after, sum), nil
}

// sameVersion reports whether two fstats of one descriptor show the same
// version of the file: same inode, link count, type, size and modification
// time. The status change time is left out (it is compared only where a
// rule says so, see Identity): a rename (an
// exact unlink or a compare-and-swap by exchange in another process), a
// chmod or an ACL tool changes it without changing a byte, and counting it
// would make every capture that overlaps one of them fail.
func sameVersion(a, b sys.Stat) bool {
	return a.Dev == b.Dev && a.Ino == b.Ino && a.Nlink == b.Nlink && a.Size == b.Size &&
		a.MtimeNs == b.MtimeNs && a.Mode.Type() == b.Mode.Type()
}
