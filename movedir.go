package exactfs

import (
	"io/fs"

	"github.com/exactfs/exactfs/internal/sys"
)

// heldDir makes a Dir of a descriptor this package just opened on a
// directory and proved with st.
func heldDir(fd int, path string, st sys.Stat) *Dir {
	d := &Dir{fd: fd, path: path, dev: st.Dev, ino: st.Ino}
	watchDir(d)
	return d
}

// CreateDir creates the directory name directly beneath d (a single name,
// no path walk) with exactly perm, and returns it open: the directory it
// made, proved by the descriptor's own stat, not whatever a name holds a
// moment later. The umask does not apply (the mode is set through the
// descriptor when mkdir's differs; when it does not, nothing more is
// done). A name that exists fails with an error matching fs.ErrExist
// (destination_exists) and touches nothing. A failure after the mkdir
// (the open, the chmod) leaves the directory made. The caller closes the
// returned Dir.
func (d *Dir) CreateDir(name string, perm fs.FileMode) (*Dir, error) {
	var made *Dir
	err := d.use("mkdir", func(dirfd int) error {
		if err := sys.Mkdir(dirfd, name, uint32(perm.Perm())); err != nil {
			return wrap("mkdir", d.join(name), err)
		}
		fd, err := sys.OpenDir(dirfd, name)
		if err != nil {
			return wrap("mkdir", d.join(name), err)
		}
		st, err := sys.Fstat(fd)
		if err == nil && sys.PermBits(st.Mode) != uint32(perm.Perm()) {
			err = sys.Fchmod(fd, uint32(perm.Perm()))
		}
		if err != nil {
			sys.Close(fd)
			return wrap("mkdir", d.join(name), err)
		}
		made = heldDir(fd, d.join(name), st)
		return nil
	})
	return made, err
}
