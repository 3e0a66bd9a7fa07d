//go:build !exactfs_portable

package statelock

import (
	"crypto/sha256"
	"os"

	"github.com/exactfs/exactfs"
)

// writtenIdentity is the identity of the record f is open on right after
// this process wrote data as its whole content: one fstat of f, and the
// digest of the bytes we wrote (what the inode holds: nobody else writes an
// inode we hold the OFD lock and the claim for). It saves re-reading our
// own bytes after every write of the sidecar.
func writtenIdentity(f *os.File, data []byte) (exactfs.Identity, error) {
	st, err := exactfs.StatFileRaw(f)
	if err != nil {
		return exactfs.Identity{}, err
	}
	if st.Size != int64(len(data)) || !st.Mode.IsRegular() {
		return exactfs.Identity{}, errRecordChanged
	}
	return identityOf(st, data), nil
}

// heldReadMax bounds readHeld's one read; a larger file (never a record
// anyone wrote) is read the careful way.
const heldReadMax = 64 << 10

// readHeld reads the whole content of a record we hold the transition
// claim for (and, but where the filesystem takes none, our OFD lock on it):
// one fstat, then one pread of one byte more than that size, which must
// return exactly that size (so it ended where the fstat said). It returns
// what exactfs.CaptureFile would, without CaptureFile's second pread and
// second fstat, which prove that no one wrote the inode during the read:
// every in-place writer of F.lock and of the sidecar (exactfs and the
// reference alike) holds the claim, which is ours, and a base writer only
// ever creates a new inode. Anything unexpected falls back to CaptureFile.
func readHeld(f *os.File) ([]byte, exactfs.Identity, error) {
	st, err := exactfs.StatFileRaw(f)
	if err != nil {
		return exactfs.CaptureRecordFile(f)
	}
	return readHeldAfter(f, st)
}

// readHeldAfter is readHeld with its fstat already made (st, just now,
// through f: a seated waiter's trust check asks the same fstat first).
func readHeldAfter(f *os.File, st exactfs.RawStat) ([]byte, exactfs.Identity, error) {
	if !st.Mode.IsRegular() || st.Size >= heldReadMax {
		return exactfs.CaptureRecordFile(f)
	}
	buf := make([]byte, st.Size+1)
	n, err := exactfs.PreadFile(f, buf, 0)
	if err != nil || int64(n) != st.Size {
		return exactfs.CaptureRecordFile(f)
	}
	data := buf[:n:n]
	return data, identityOf(st, data), nil
}

// identityOf is the exactfs identity of the regular file st describes,
// holding data. A regular file's mode has no type bits: only the
// permission, setuid, setgid and sticky bits, as exactfs records them.
func identityOf(st exactfs.RawStat, data []byte) exactfs.Identity {
	return exactfs.Identity{
		Dev: st.Dev, Ino: st.Ino, Nlink: st.Nlink, Size: st.Size,
		MtimeNs: st.MtimeNs, CtimeNs: st.CtimeNs, Mode: st.Mode, SHA256: sha256.Sum256(data),
	}
}
