package statelock

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
)

// heldRecord is an owner record this process wrote and holds: the open
// read-write descriptor (which carries the OFD lock, so the kernel vouches
// for us while it is open) and the identity of the bytes we wrote.
type heldRecord struct {
	name string
	f    *os.File
	id   exactfs.Identity // for a sidecar taken by reuseReleased, only Dev and Ino
	data []byte
	rec  *Record
	// kept: a claim's sidecar left the tombstone it was, attested by our
	// kernel lock alone (SPEC §4.8.4); data is that tombstone.
	kept bool
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
//
// Names too long to stage (the staging name adds 46 bytes, so beside a
// state file name of 188 bytes or more the sidecar's does not fit in
// NAME_MAX, and from 205 bytes F.lock's does not either), and filesystems
// without a no-replace rename, take createFallback instead, so that Go
// locks every name a TypeScript peer can (up to F.lock.transition.owner's
// own limit, a state file name of 233 bytes). On Linux (create_linux.go)
// that is createInPlace, as the reference creates every record: our OFD
// lock is on the inode before its first byte, and a kill while it is
// still empty leaves a record the abandoned-write rule reclaims (judge.go:
// after 30 s, since it was created and never written). Where there is no
// lease probe to prove such a record abandoned (create_other.go: macOS,
// the BSDs), an empty record would block the lock until a person removed
// it, so the record is staged under a short private name instead and
// published by exactfs's PublishStaged (rename, or link where the
// filesystem has no rename flags); in place only where neither exists.
func (l *locker) createRecord(name string, rec *Record) (*heldRecord, error) {
	if fault(hook.LockCreateInPlace, l.path(name)) == nil {
		h, err := l.publishRecord(name, rec)
		if !errors.Is(err, exactfs.ErrAtomicUnavailable) && !errors.Is(err, syscall.ENAMETOOLONG) {
			return h, err
		}
	}
	return l.createFallback(name, rec)
}

// publishRecord creates the record whole (exactfs's Dir.CreateWith):
// under a private staging name it is created, locked (OFD) and written,
// and only then given its name by a no-replace rename. So no process ever
// sees our record empty or torn, and a holder killed at any instant leaves
// either no record or a whole one whose kernel lock dies with it; nothing
// that only a person could clear. (A record created in place, as the
// reference does, is empty between the create and the write: a kill there
// leaves an empty record that only the abandoned-write rule reclaims, 30 s
// later.) The rename is not
// fsynced: see the package documentation. Where the filesystem has no
// no-replace rename this returns atomic_unavailable, and where the staging
// name is too long for the directory ENAMETOOLONG (the name's own length
// plus 46 bytes); the caller then creates in place. A name that exists (nearly always: a tombstone to
// reuse) is destination_exists, said at the cost of one lstat before
// anything is staged.
func (l *locker) publishRecord(name string, rec *Record) (*heldRecord, error) {
	var data []byte
	f, id, err := l.dir.CreateWith(name, func(f *os.File) (exactfs.Identity, error) {
		var err error
		if rec, data, err = l.writeFresh(f, name, rec); err != nil {
			return exactfs.Identity{}, err
		}
		return writtenIdentity(f, data)
	})
	if errors.Is(err, exactfs.ErrIdentityMismatch) {
		// The rename moved exactly our inode, but the name no longer holds it.
		return nil, fmt.Errorf("%w: %s is not the record we published", errRecordChanged, l.path(name))
	}
	if err != nil {
		return nil, err
	}
	return &heldRecord{name: name, f: f, id: id, data: data, rec: rec}, nil
}

// writeFresh is the step both ways of creating a record share: take the
// OFD lock on f, a file we have just created (or the record without the
// kernel fields where there are no OFD locks), then write rec into it, with
// the hook and fault seams of that write. It returns the record as written.
func (l *locker) writeFresh(f *os.File, name string, rec *Record) (*Record, []byte, error) {
	// Root in another uid's directory: the record is the directory
	// owner's before a byte of it is written (trust_unix.go).
	if err := l.chownForDir(f.Chown); err != nil {
		return rec, nil, err
	}
	rec, err := lockOrPlain(f, rec)
	if err != nil {
		return rec, nil, err
	}
	data := rec.Encode()
	hook.Fire(hook.LockOwnerRecordWrite, l.path(name))
	if err := fault(hook.LockOwnerRecordWrite, l.path(name)); err != nil {
		return rec, data, err
	}
	// f is empty: this write makes it longer, and so is fsynced at once
	// (writeGrowing), so that a power cut leaves no empty record the
	// reference could never reclaim, but within the write itself.
	err = writeGrowing(f, l.path(name), data, 0)
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
	err = l.dir.UnlinkExact(name, cur.id, exactfs.LockQuarantineName())
	if errors.Is(err, exactfs.ErrNotFound) || errors.Is(err, exactfs.ErrIdentityMismatch) {
		return nil
	}
	return err
}

// lockOrPlain takes the OFD lock on f for rec. Where the filesystem takes
// no OFD locks, the record is written without the kernel evidence fields:
// a record that claims a kernel lock it does not hold would read as dead to
// every contender whose F_OFD_GETLK answers, so it must not claim one.
// boot_id goes too, although it claims nothing now (Record.Kernel): builds
// before 2026-12-04 read a boot id alone as a claim of the OFD lock.
//
// A record with a kernel slot (ofd_slot) is attested by the shared lock on
// its slot's byte alone (slotLock), every other one by the exclusive lock
// on the whole holder range.
//
// The same holds where the lock was taken but another open of the file
// does not see it (exactfs.LockVisible, proved once per volume: a volume
// that keeps locks per handle, an SMB handle that reconnected without its
// locks): the record claims nothing ("kernel_lock" on Windows included),
// and judges use the reference's rules on the record (pid, start time,
// host), never "range free, holder gone".
func lockOrPlain(f *os.File, rec *Record) (*Record, error) {
	var err error
	if rec.OfdSlot != 0 {
		err = slotLock(f.Fd(), rec.OfdSlot)
	} else {
		err = ofdLock(f)
	}
	if err == nil && rec.Kernel() && !exactfs.LockVisible(f, ofdHeld) {
		err = errOFDUnsupported
	}
	if errors.Is(err, errOFDUnsupported) {
		plain := *rec
		plain.PidfdIno, plain.PidNS, plain.BootID, plain.OfdSlot, plain.KernelLock = 0, 0, "", 0, false
		return &plain, nil
	}
	return rec, err
}
