package statelock

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
)

// errRecordChanged means the record at a name is no longer the one a
// decision was made from; whatever is there now is left alone.
var errRecordChanged = errors.New("owner record changed")

// rewrite replaces the bytes of the record f is open on, in place: the
// bytes and identity read through f must equal want; one write of the new
// bytes padded with spaces to the current size (SPEC §4.2, writeAll); then
// the pathname must still name the same inode. It returns the identity and
// the bytes the inode now holds (data and its padding), which are what a
// later proof compares. A write that fails half way puts the old bytes back
// through the same descriptor.
//
// There is deliberately no fsync: see the package documentation.
//
// checked says the caller captured want through f itself a moment ago,
// and proved f's inode trusted (trust.go) through f, so neither need be
// done again.
//
// The trust rule (trust.go) is enforced here, where every in-place
// rewrite of a record we did not write passes: an inode owned by another
// uid, with other links or another mode is refused, never written.
func (l *locker) rewrite(name string, f *os.File, want exactfs.Identity, old, data []byte, checked bool) (exactfs.Identity, []byte, error) {
	if !checked {
		if why, st := l.distrustFile(f); why != "" {
			return exactfs.Identity{}, nil, l.refuseUntrusted(name, st, why, nil)
		}
		_, cur, err := exactfs.CaptureRecordFile(f)
		if err != nil {
			return exactfs.Identity{}, nil, err
		}
		if !sameRecord(cur, want) {
			return exactfs.Identity{}, nil, fmt.Errorf("%w before rewrite: %s", errRecordChanged, l.path(name))
		}
	}
	// want.Size is the size of the inode now: proved through f just above,
	// or by the caller's capture (checked), and nobody writes into it in
	// between (every in-place writer of a record holds the claim, and of
	// the sidecar also its OFD lock).
	data, err := overwrite(f, l.path(name), want.Size, old, data)
	if err != nil {
		return exactfs.Identity{}, nil, err
	}
	// The inode f is open on holds exactly data: every in-place writer of a
	// record (exactfs and the reference alike) holds the claim, which is
	// ours, and a base writer only ever creates a new inode; so one fstat
	// gives the identity (writtenIdentity) without reading our own bytes
	// back. The pathname must still name that inode (lstat): a base writer
	// may have replaced the name, never the bytes.
	id, err := writtenIdentity(f, data)
	if err != nil {
		return exactfs.Identity{}, nil, fmt.Errorf("%w after rewrite: %s: %w", errRecordChanged, l.path(name), err)
	}
	if err := l.stillNames(name, id); err != nil {
		return exactfs.Identity{}, nil, err
	}
	return id, data, nil
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

// overwrite makes data (padded with spaces to size) the content of f,
// whose current size is size (< 0: unknown), putting old back if the write
// fails half way. It returns the bytes f now holds. It is rewrite
// without rewrite's proofs, for callers that make the proofs they need
// themselves: the sidecar of a claim we hold, which nobody else writes,
// renames or removes meanwhile (reuseReleased, releaseClaim), and the
// release of F.lock (releaseRecord).
func overwrite(f *os.File, path string, size int64, old, data []byte) ([]byte, error) {
	written, err := writeAll(f, path, data, size)
	if err != nil {
		if _, rerr := writeAll(f, path, old, -1); rerr != nil {
			err = errors.Join(err, fmt.Errorf("restoring the previous bytes also failed: %w", rerr))
		}
		return nil, err
	}
	return written, nil
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

// writeAll makes data the content of f with one write at offset 0: data
// followed by spaces up to f's current size, and no truncate (SPEC §4.2,
// padding: the reference parses with JSON.parse, which accepts trailing
// white space, and compares sizes only between two observations of one
// inode). A record file so keeps the size of the longest record ever
// written into it, a few hundred bytes. A holder killed at any instant
// leaves the old bytes or the new ones whole, never the new bytes followed
// by a torn tail of the old ones. It returns the bytes f now holds.
//
// size is the current size of f, as proved by the caller; < 0: unknown,
// then f is stat'ed. path names the record, for the hook (f's own name may
// be the staging name it was created under).
func writeAll(f *os.File, path string, data []byte, size int64) ([]byte, error) {
	if size < 0 {
		fi, err := f.Stat()
		if err != nil {
			return nil, err
		}
		size = fi.Size()
	}
	written := padTo(data, size)
	if err := writeGrowing(f, path, written, size); err != nil {
		return nil, err
	}
	hook.Fire(hook.LockRewriteBeforeTruncate, path)
	return written, nil
}

// writeGrowing writes buf at offset 0 of f, a record file (F.lock or the
// claim sidecar, named path) of size bytes before the write, and when the write makes
// f longer, fsyncs f before it returns, so before anyone relies on it.
//
// Why: a write that extends a file within a block it already has is
// journaled by ext4 as the new size at the next commit (every 5 s), while
// the bytes wait for writeback (30 s). A power cut in between leaves the
// old bytes followed by zero bytes (a tombstone and NULs; after a creation,
// an empty file), which the reference cannot parse and never reclaims: its
// processes would wait for good until an exactfs one came by. The fsync
// shrinks that window from tens of seconds to the write and the fsync
// themselves. A record file keeps the size of the longest record ever
// written into it (writeAll's padding), so in steady state no write grows
// it and this costs nothing per cycle; it is paid at a record's creation
// and when a longer record than any before moves in.
func writeGrowing(f *os.File, path string, buf []byte, size int64) error {
	if _, err := f.WriteAt(buf, 0); err != nil {
		return err
	}
	if int64(len(buf)) <= size {
		return nil
	}
	hook.Fire(hook.LockRecordGrowSync, path)
	if err := f.Sync(); err != nil {
		return fmt.Errorf("making the growth of %s durable (fsync after a write that made it longer): %w", path, err)
	}
	return nil
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
