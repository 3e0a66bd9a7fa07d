//go:build (!linux || exactfs_portable) && !windows

package sys

// ProbeUnopened: only Linux can tell whether a file is open elsewhere.
func ProbeUnopened(fd int) error { return ErrUnsupported }

// ProbeNoWriter: only Linux can tell whether a file is open for writing
// elsewhere.
func ProbeNoWriter(fd int) error { return ErrUnsupported }
