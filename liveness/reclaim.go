package liveness

import (
	"errors"
	"os"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/sys"
)

// This file is the one judge-then-remove step of the lock protocols: a
// record is removed only on proof that its owner is gone, and only the very
// version that was judged. The protocols differ in what a record says and
// which rules apply to it (the judge function); they share how the record
// is read, how the kernel is asked, and how it is removed.

// Captured is a record as the reclaim engine read it: the bytes and the
// identity of one version, both through File, the no-follow descriptor the
// engine opened on the record's inode. File is valid during the judge call
// only; a judge uses it to ask the kernel (Attested), never to read again.
type Captured struct {
	Data []byte
	ID   exactfs.Identity
	File *os.File
}

// attestSpan is the byte range [0, attestSpan) of a record file that the
// attestation lock covers: far beyond any record, and covering all of it.
// A protocol may take locks of its own above it without touching the
// attestation (the state lock queues its waiters there, one byte each).
const attestSpan = 1 << 40

// HoldAttestation takes the kernel lock that attests a holder's ownership
// of a record: an exclusive open-file-description lock on the
// record file f (its bytes [0, 2^40)), which must be open for writing. A holder takes it
// before it writes the bytes that claim the attestation, and keeps f open
// for as long as it holds the record; the kernel drops the lock when f's
// last descriptor goes, however the holder dies. It returns false where the
// platform or the filesystem takes no such lock: the record must then not
// claim one, and is judged by the pid rules alone.
func HoldAttestation(f *os.File) bool {
	err := sys.Control(f, func(fd int) error { return sys.OFDLock(fd, 0, attestSpan) })
	return err == nil
}

// Attested asks the kernel, through f (a descriptor on the very inode
// whose bytes were judged, never a fresh lookup of the name), whether the
// writer of a record that claims the attestation still holds its lock: no
// lock proves its descriptor gone, so the owner is Dead, with no pid-reuse
// ambiguity; a lock proves it there (Alive). ok is false when the kernel
// cannot answer (another platform, a filesystem without OFD locks): then
// nothing follows and the pid rules apply.
//
// The answer means something only for a record written on this host in
// this boot by a writer that took HoldAttestation before writing it; the
// caller checks that (the record's boot id is the current one, and it says
// it holds the lock). Another writer's byte-range lock on the file (a
// TypeScript peer takes none) would read as Alive: fail closed.
func Attested(f *os.File) (j Judgement, ok bool) {
	var held, known bool
	if sys.Control(f, func(fd int) error { held, known = sys.OFDHeld(fd, 0, attestSpan); return nil }) != nil || !known {
		return Judgement{}, false
	}
	if held {
		return Judgement{Verdict: Alive, Reason: "the holder's kernel lock on the record is held"}, true
	}
	return Judgement{Verdict: Dead, Reason: "no kernel lock on the record: the holder's descriptor is gone"}, true
}

// codeReclaimBusy: another process is removing the same record right now.
const codeReclaimBusy exactfs.Code = "reclaim_busy"

// Removal is how Reclaim removes a record judged Dead. Quarantine returns
// the name the exact unlink moves the record to. Judged and Removing, when
// set, run at the two windows of the removal: Judged after the verdict and
// before the record is captured again, Removing after that capture proved
// it unchanged and just before the unlink. A protocol's tests plant a
// successor there (internal/hook).
//
// Unguarded skips the reclaim flock, for a caller that keeps other
// reclaimers of the name out itself (the state lock removes records only
// under its transition claim, and a flock there could meet the lock's own
// byte-range locks where a filesystem emulates flock with them).
//
// A record is read with exactfs.RecordCap: a larger file is refused
// (record_too_large) before a byte of it is read. AnySize lifts the cap,
// for a caller that judges files that are not records (a state file's
// crash residue, judged by its name, link count and openers, never parsed).
type Removal struct {
	Quarantine       func() string
	Judged, Removing func()
	Unguarded        bool
	AnySize          bool
}

// Reclaim is the judge-then-remove step. It opens name in d without
// following a symlink, captures one version of it through that descriptor,
// and asks judge about exactly those bytes. Unless the verdict is Dead,
// nothing is touched and the judgement is returned with a nil error. On
// Dead, Reclaim takes an exclusive flock on the record (unless Unguarded), so that reclaimers
// in other Go processes take turns instead of racing one exact unlink
// (interleaved exchange-based unlinks can strand a placeholder at the
// name), captures the name again (it must still hold the judged bytes and
// inode), and removes exactly the judged version by exact unlink, the
// bytes going to the quarantine name. A successor that took the name after
// the capture survives: identity_mismatch, or not_found when the name was
// freed meanwhile.
//
// The errors are those of the open and the captures (not_found: nothing is
// there; changed_during_read: a writer was rewriting it; reparse_point,
// not_regular_file: not a record anyone wrote), of the exact unlink
// (identity_mismatch, atomic_unavailable, ...), or code reclaim_busy when
// another process holds the reclaim flock. Judgement.Verdict is Dead when
// the error is the removal's.
func Reclaim(d *exactfs.Dir, name string, rm Removal, judge func(Captured) Judgement) (Judgement, error) {
	f, err := d.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return Judgement{}, err
	}
	defer f.Close()
	capture := exactfs.CaptureRecordFile
	if rm.AnySize {
		capture = exactfs.CaptureFile
	}
	data, id, err := capture(f)
	if err != nil {
		return Judgement{}, err
	}
	j := judge(Captured{Data: data, ID: id, File: f})
	if j.Verdict != Dead {
		return j, nil
	}
	if !rm.Unguarded {
		if err := guard(f); err != nil {
			return j, err
		}
	}
	run(rm.Judged)
	if err := unchanged(d, name, f.Name(), id, rm.AnySize); err != nil {
		return j, err
	}
	run(rm.Removing)
	return j, d.UnlinkExact(name, id, rm.Quarantine())
}

// guard takes the reclaim flock on the record open as f.
func guard(f *os.File) error {
	err := sys.Control(f, sys.TryFlock)
	switch {
	case err == sys.ErrWouldBlock:
		return &exactfs.Error{Op: "reclaim", Path: f.Name(), Code: codeReclaimBusy, Err: err,
			Detail: "another process is reclaiming this record"}
	case err != nil:
		return &exactfs.Error{Op: "reclaim", Path: f.Name(), Code: exactfs.CodeIOError, Err: err,
			Detail: "the record could not be locked for its removal"}
	}
	return nil
}

// unchanged captures name again and proves it still holds the judged
// version (the same inode, link count and bytes): not_found when the name
// was freed meanwhile, identity_mismatch when anything else is there or
// the capture cannot say (a symlink planted, a writer rewriting it).
func unchanged(d *exactfs.Dir, name, path string, judged exactfs.Identity, anySize bool) error {
	capture := d.CaptureRecord
	if anySize {
		capture = d.Capture
	}
	_, cur, err := capture(name)
	switch {
	case errors.Is(err, exactfs.ErrNotFound):
		return err
	case err != nil:
		return &exactfs.Error{Op: "reclaim", Path: path, Code: exactfs.CodeIdentityMismatch, Err: err,
			Detail: "the record could not be captured again after its verdict; left alone"}
	case !cur.SameContent(judged) || cur.Nlink != judged.Nlink:
		return &exactfs.Error{Op: "reclaim", Path: path, Code: exactfs.CodeIdentityMismatch,
			Detail: "the record changed after its verdict; left alone"}
	}
	return nil
}

func run(step func()) {
	if step != nil {
		step()
	}
}
