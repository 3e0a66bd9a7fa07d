package exactfs

import (
	"errors"
	"os"

	"github.com/exactfs/exactfs/internal/sys"
)

// The one judge-then-remove bracket of the module: a file is removed only
// when a judge, shown the very bytes and identity read through one
// no-follow descriptor, says so, and only that version is removed. The lock
// protocols above (statelock's records and residue, the store's leases)
// differ in what a file says and which rules apply to it (the judge); they
// share how it is read, how reclaimers take turns, and how it is removed:
// here.

// Captured is a file as RemoveIf read it: the bytes and the identity of one
// version, both through File, the no-follow descriptor RemoveIf opened on
// the file's inode. File is valid during the judge call only; a judge uses
// it to ask the kernel (a lock, an attestation, the no-writer probes),
// never to read again.
type Captured struct {
	Data []byte
	ID   Identity
	File *os.File
}

// codeReclaimBusy: another process is removing the same file right now.
const codeReclaimBusy Code = "reclaim_busy"

// Removal is how RemoveIf removes a file its judge condemned. Quarantine
// returns the name the exact unlink moves the file to. Judged and Removing,
// when set, run at the two windows of the removal: Judged after the verdict
// and before the file is captured again, Removing after that capture proved
// it unchanged and just before the unlink. A protocol's tests plant a
// successor there (internal/hook).
//
// Unguarded skips the reclaim flock, for a caller that keeps other
// reclaimers of the name out itself (the state lock removes records only
// under its transition claim, and a flock there could meet the lock's own
// byte-range locks where a filesystem emulates flock with them).
//
// A record is read with RecordCap: a larger file is refused
// (record_too_large) before a byte of it is read. AnySize lifts the cap,
// for a caller that judges files that are not records (a state file's
// crash residue, judged by its name, link count and openers, never parsed).
// With AnySize, a MaxSize above 0 caps the judged read instead
// (CaptureFileWithin): a file larger at its fstat is refused
// (record_too_large) unread, and one that grows past MaxSize while it is
// read fails having read at most MaxSize+1 bytes, for a caller that bounded
// the file on an lstat another process can outrun. The capture again after
// the verdict never reads past the judged version's size.
type Removal struct {
	Quarantine       func() string
	Judged, Removing func()
	Unguarded        bool
	AnySize          bool
	MaxSize          int64
}

// RemoveIf is the judge-then-remove bracket. It opens name in d without
// following a symlink, captures one version of it through that descriptor,
// and asks judge about exactly those bytes. When judge returns false,
// nothing is touched and RemoveIf returns nil. Otherwise RemoveIf takes an
// exclusive flock on the file (unless Unguarded), so that removers in other
// Go processes take turns instead of racing one exact unlink (interleaved
// exchange-based unlinks can strand a placeholder at the name), captures
// the name again (it must still hold the judged bytes, inode and link
// count), and removes exactly the judged version by exact unlink, the bytes
// going to the quarantine name. A successor that took the name after the
// capture survives: identity_mismatch, or not_found when the name was freed
// meanwhile.
//
// The errors are those of the open and the captures (not_found: nothing is
// there; changed_during_read: a writer was rewriting it; reparse_point,
// not_regular_file: not a file anyone wrote), of the exact unlink
// (identity_mismatch, atomic_unavailable, ...), or code reclaim_busy when
// another process holds the flock. Whether judge was called tells a caller
// which: an error after a true verdict is the removal's.
func (d *Dir) RemoveIf(name string, rm Removal, judge func(Captured) bool) error {
	f, err := d.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	capture := CaptureRecordFile
	switch {
	case rm.AnySize && rm.MaxSize > 0:
		capture = func(f *os.File) ([]byte, Identity, error) { return CaptureFileWithin(f, rm.MaxSize) }
	case rm.AnySize:
		capture = CaptureFile
	}
	data, id, err := capture(f)
	if err != nil {
		return err
	}
	if !judge(Captured{Data: data, ID: id, File: f}) {
		return nil
	}
	if !rm.Unguarded {
		if err := guard(f); err != nil {
			return err
		}
	}
	run(rm.Judged)
	if err := unchanged(d, name, f.Name(), id, rm.AnySize); err != nil {
		return err
	}
	run(rm.Removing)
	return d.UnlinkExact(name, id, rm.Quarantine())
}

// guard takes the remover's flock on the file open as f.
func guard(f *os.File) error {
	err := sys.Control(f, sys.TryFlock)
	switch {
	case err == sys.ErrWouldBlock:
		return &Error{Op: "reclaim", Path: f.Name(), Code: codeReclaimBusy, Err: err,
			Detail: "another process is reclaiming this record"}
	case err != nil:
		return &Error{Op: "reclaim", Path: f.Name(), Code: CodeIOError, Err: err,
			Detail: "the record could not be locked for its removal"}
	}
	return nil
}

// unchanged captures name again and proves it still holds the judged
// version (the same inode, link count and bytes): not_found when the name
// was freed meanwhile, identity_mismatch when anything else is there or
// the capture cannot say (a symlink planted, a writer rewriting it).
func unchanged(d *Dir, name, path string, judged Identity, anySize bool) error {
	capture := d.CaptureRecord
	if anySize {
		// Only the judged version passes: a file larger than it changed,
		// and is not read past the judged size.
		capture = func(name string) ([]byte, Identity, error) { return d.CaptureWithin(name, judged.Size) }
	}
	_, cur, err := capture(name)
	switch {
	case errors.Is(err, ErrNotFound):
		return err
	case err != nil:
		return &Error{Op: "reclaim", Path: path, Code: CodeIdentityMismatch, Err: err,
			Detail: "the record could not be captured again after its verdict; left alone"}
	case !cur.SameContent(judged) || cur.Nlink != judged.Nlink:
		return &Error{Op: "reclaim", Path: path, Code: CodeIdentityMismatch,
			Detail: "the record changed after its verdict; left alone"}
	}
	return nil
}

func run(step func()) {
	if step != nil {
		step()
	}
}
