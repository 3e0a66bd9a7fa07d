package liveness

import (
	"os"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/sys"
)

// This file holds the kernel evidence of a record's holder (the
// attestation lock) and Reclaim, the judge-then-remove step of the lock
// protocols in liveness's words: a record is removed only on proof that its
// owner is gone (a Dead Judgement), and only the very version that was
// judged. The bracket itself (open, capture, flock, capture again, exact
// unlink) is the root's: exactfs.Dir.RemoveIf.

// Captured is a record as the reclaim engine read it (exactfs.Captured).
type Captured = exactfs.Captured

// Removal is how Reclaim removes a record judged Dead (exactfs.Removal:
// the quarantine name, the two hook windows, Unguarded, AnySize).
type Removal = exactfs.Removal

// attestSpan is the byte range [0, attestSpan) of a record file that the
// attestation lock covers: far beyond any record, and covering all of it.
// A protocol may take locks of its own above it without touching the
// attestation (the state lock queues its waiters there, one byte each).
const attestSpan = 1 << 40

// HoldAttestation takes the kernel lock that attests a holder's ownership
// of a record: an exclusive open-file-description lock on the
// record file f (its bytes [0, 2^40); on Windows, where byte-range locks
// block other handles' reads, [2^39, 2^40), beyond any record: see
// attest_windows.go), which must be open for writing. A holder takes it
// before it writes the bytes that claim the attestation, and keeps f open
// for as long as it holds the record; the kernel drops the lock when f's
// last descriptor goes, however the holder dies. It returns false where the
// platform or the filesystem takes no such lock: the record must then not
// claim one, and is judged by the pid rules alone.
func HoldAttestation(f *os.File) bool {
	err := sys.Control(f, holdAttestation)
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
	if sys.Control(f, func(fd int) error { held, known = attestationHeld(fd); return nil }) != nil || !known {
		return Judgement{}, false
	}
	if held {
		return Judgement{Verdict: Alive, Reason: "the holder's kernel lock on the record is held"}, true
	}
	return Judgement{Verdict: Dead, Reason: "no kernel lock on the record: the holder's descriptor is gone"}, true
}

// Reclaim is the judge-then-remove step: exactfs.Dir.RemoveIf with a
// judge that removes on a Dead verdict. Unless the verdict is Dead, nothing
// is touched and the judgement is returned with a nil error; on Dead the
// error is the removal's (see RemoveIf), and before a verdict it is the
// open's or the capture's, with a zero Judgement.
func Reclaim(d *exactfs.Dir, name string, rm Removal, judge func(Captured) Judgement) (Judgement, error) {
	var j Judgement
	err := d.RemoveIf(name, rm, func(c exactfs.Captured) bool {
		j = judge(c)
		return j.Verdict == Dead
	})
	return j, err
}
