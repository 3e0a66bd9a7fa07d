package sys

import "golang.org/x/sys/unix"

// FSTypeName returns the statfs f_fstypename of the filesystem fd is open
// on ("apfs", "nfs", ...). The errno is returned unchanged.
func FSTypeName(fd int) (string, error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return "", err
	}
	return unix.ByteSliceToString(st.Fstypename[:]), nil
}
