package statelock

import (
	"errors"
	"os"
	"time"

	"github.com/exactfs/exactfs"
)

// keepSidecarTombstone is the internal switch of SPEC §4.8.4: a claim's
// taker that holds its kernel lock on the sidecar leaves the sidecar the
// tombstone it found (reuseReleased). A variable for tests that show what
// the old way left after a power cut.
var keepSidecarTombstone = true

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
	id, data, err := l.rewrite(name, f, judged.id, judged.data, data, false)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &heldRecord{name: name, f: f, id: id, data: data, rec: rec}, nil
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
	if why, _ := l.distrustFile(f); why != "" {
		// Never adopted (trust.go): the full path replaces it or refuses.
		f.Close()
		return nil, false, nil
	}
	locked := false
	for try := 0; ; try++ {
		rec2, lerr := lockOrPlain(f, rec)
		if lerr == nil {
			locked = ofdSupported && rec2 == rec
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
	if name == l.sidecar && locked && keepSidecarTombstone {
		// SPEC §4.8.4: the kernel lock we hold on the sidecar attests the
		// claim to every exactfs reclaimer (inspectClaim asks it before
		// the bytes), and the reference never reads the sidecar of a claim
		// it does not hold; so the tombstone stays, and no order of
		// write-back can leave the directory gone and the sidecar naming
		// us (§4.3): it never does.
		return &heldRecord{name: name, f: f, id: exactfs.Identity{Dev: id.Dev, Ino: id.Ino}, data: old, rec: rec, kept: true}, true, nil
	}
	data := rec.Encode()
	if name == l.sidecar {
		if err := l.claimDurable(); err != nil {
			ofdUnlock(f)
			f.Close()
			return nil, false, err
		}
		if data, err = overwrite(f, l.path(name), id.Size, old, data); err != nil {
			ofdUnlock(f)
			f.Close()
			return nil, false, nil
		}
		return &heldRecord{name: name, f: f, id: exactfs.Identity{Dev: id.Dev, Ino: id.Ino}, data: data, rec: rec}, true, nil
	}
	nid, data, err := l.rewrite(name, f, id, old, data, true)
	if err != nil {
		f.Close()
		// Bytes were written: report it as reuseTombstone would, so that
		// takeRecord decides exactly as on its full path.
		return nil, true, err
	}
	return &heldRecord{name: name, f: f, id: nid, data: data, rec: rec}, true, nil
}
