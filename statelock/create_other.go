//go:build !linux || exactfs_portable

package statelock

import (
	"errors"
	"fmt"
	"os"

	"github.com/exactfs/exactfs"
)

// createFallback creates a record whose ordinary staging name does not fit
// beside it, or in a directory without a no-replace rename, where no lease
// probe can ever prove a record abandoned (macOS, the BSDs; createRecord).
// Created in place, a record is empty between the create and the write,
// and a creator killed there leaves an empty F.lock that every exactfs and
// TypeScript contender keeps for good and recover only reports (exit 75),
// until a person removes it. So it is written whole first, under a short
// private name (a lock quarantine name, 73 bytes, whatever the record's
// name), and then given its name by exactfs's PublishStaged, which never
// replaces: a no-replace rename, or link(2) and the removal of the staged
// name where the filesystem has no rename flags. A kill at any instant
// leaves no record, or a whole one, at name; the staged file a killed
// creator leaves is residue that names no lock (Inspect lists it as
// "quarantine": an owner record under no name, which Recover removes once
// it is RecoverResidueAge old), never a lock nobody can take.
//
// The bytes are the record's own, as createInPlace writes them; the cost
// is PublishStaged's directory flush, on this path only. Where the
// filesystem has neither rename flags nor hard links (FAT, exFAT), the
// record is created in place after all: nothing else can name it.
func (l *locker) createFallback(name string, rec *Record) (*heldRecord, error) {
	staged := exactfs.LockQuarantineName()
	f, err := l.dir.OpenFile(staged, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	_, created, err := exactfs.CaptureFile(f)
	var data []byte
	written := rec
	if err == nil {
		written, data, err = l.writeFresh(f, name, rec)
	}
	if err == nil {
		_, err = writtenIdentity(f, data)
	}
	if err == nil {
		var c exactfs.Commit
		c, err = l.dir.PublishStaged(staged, name)
		if c == exactfs.Committed {
			// Only the directory's flush can have failed: the record has
			// its name, and records are not flushed anyway (doc.go).
			err = nil
		} else if c == exactfs.Unknown {
			// name may hold our record now: nothing is retracted.
			f.Close()
			return nil, err
		}
	}
	if err != nil {
		if rerr := l.retract(staged, f, created); rerr != nil {
			err = errors.Join(err, fmt.Errorf("and the retraction of its staged copy %s failed: %w", l.path(staged), rerr))
		}
		f.Close()
		if errors.Is(err, exactfs.ErrAtomicUnavailable) {
			return l.createInPlace(name, rec)
		}
		return nil, err
	}
	// The identity as published (the rename changed its change time), and
	// name must hold it.
	id, err := writtenIdentity(f, data)
	if err == nil {
		err = l.stillNames(name, id)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s is not the record we published: %w", errRecordChanged, l.path(name), err)
	}
	return &heldRecord{name: name, f: f, id: id, data: data, rec: written}, nil
}

// quarantineOrigin says where a record under a lock quarantine name comes
// from, for Recover. Here createFallback stages our new records under such
// a name, so a creator killed before publishing leaves one too: empty (killed
// before the write) or an unreleased exactfs record (one with boot_id).
// A tombstone, or a record without boot_id (the reference's), was never
// staged by us: only an exact unlink detaches those.
func quarantineOrigin(data []byte) string {
	const detached = "owner record detached by an interrupted exact unlink"
	if len(data) == 0 {
		return "empty owner record staged by a creator that died before writing and publishing it (or one an interrupted exact unlink detached)"
	}
	rec, err := ParseRecord(data)
	if err != nil || rec.Released || rec.BootID == "" {
		return detached
	}
	return "owner record staged by a creator that died before publishing it (or one an interrupted exact unlink detached)"
}
