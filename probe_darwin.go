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

// probeACL runs the store's extended-ACL calls on the probe file
// (macACLCalls.probe says what it reports).
func probeACL(fd int) ProbeResult { return macKernel.probe(fd) }

func probeOFD(int, int) ProbeResult { return ProbeResult{false, macNoOFD} }
