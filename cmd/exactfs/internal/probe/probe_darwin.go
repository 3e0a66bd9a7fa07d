package probe

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// fsType names the filesystem of fd from statfs f_fstypename.
func fsType(fd int) (name string, network bool) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return "unknown (statfs: " + err.Error() + ")", false
	}
	n := unix.ByteSliceToString(st.Fstypename[:])
	switch n {
	case "nfs", "smbfs", "afpfs", "webdav":
		return n, true
	}
	return n, false
}

func probeACL(int) Result {
	return Result{false, "not probed on macOS (extended ACLs are checked by the store itself)"}
}

func probeOFD(int, int) Result {
	return Result{false, "macOS has no open-file-description locks; a holder is judged by pid and start time"}
}

func isNotSupported(en syscall.Errno) bool { return en == unix.ENOTSUP || en == unix.EOPNOTSUPP }

func errnoName(en syscall.Errno) string { return unix.ErrnoName(en) }
