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
	}, nil
}
