package sys

import "golang.org/x/sys/unix"

// FSMagic returns the statfs f_type of the filesystem fd is open on: the
// magic number of linux/magic.h. The errno is returned unchanged.
func FSMagic(fd int) (uint32, error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return 0, err
	}
	return uint32(st.Type), nil
}
