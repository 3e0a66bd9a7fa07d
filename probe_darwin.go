package exactfs

import "github.com/exactfs/exactfs/internal/sys"

// fsType names the filesystem of fd from statfs f_fstypename.
func fsType(fd int) (name string, network bool) {
	n, err := sys.FSTypeName(fd)
	if err != nil {
		return "unknown (statfs: " + err.Error() + ")", false
	}
	switch n {
	case "nfs", "smbfs", "afpfs", "webdav":
		return n, true
	}
	return n, false
}

func probeACL(int) ProbeResult {
	return ProbeResult{false, "not probed on macOS (extended ACLs are checked by the store itself)"}
}

func probeOFD(int, int) ProbeResult {
	return ProbeResult{false, "macOS has no open-file-description locks; a holder is judged by pid and start time"}
}
