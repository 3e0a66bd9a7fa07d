package statelock

import (
	"crypto/sha256"
	"io/fs"
	"os"

	"github.com/exactfs/exactfs"
	"golang.org/x/sys/unix"
)

// writtenIdentity is the identity of the record f is open on right after
// this process wrote data as its whole content: one fstat of f, and the
// digest of the bytes we wrote (what the inode holds: nobody else writes an
// inode we hold the OFD lock and the claim for). It saves re-reading our
// own bytes after every write of the sidecar.
func writtenIdentity(f *os.File, data []byte) (exactfs.Identity, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return exactfs.Identity{}, err
	}
	if st.Size != int64(len(data)) || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return exactfs.Identity{}, errRecordChanged
	}
	return identityOf(&st, data), nil
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
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size >= heldReadMax {
		return exactfs.CaptureFile(f)
	}
	buf := make([]byte, st.Size+1)
	n, err := unix.Pread(int(f.Fd()), buf, 0)
	if err != nil || int64(n) != st.Size {
		return exactfs.CaptureFile(f)
	}
	data := buf[:n:n]
	return data, identityOf(&st, data), nil
}

// identityOf is the exactfs identity of the inode st describes, holding data.
func identityOf(st *unix.Stat_t, data []byte) exactfs.Identity {
	mode := fs.FileMode(st.Mode & 0o777)
	if st.Mode&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if st.Mode&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if st.Mode&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return exactfs.Identity{
		Dev: st.Dev, Ino: st.Ino, Nlink: uint64(st.Nlink), Size: st.Size,
		MtimeNs: st.Mtim.Nano(), CtimeNs: st.Ctim.Nano(), Mode: mode, SHA256: sha256.Sum256(data),
	}
}
