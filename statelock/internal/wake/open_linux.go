//go:build !exactfs_portable

package wake

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/sys"
)

// Open opens the mailbox beside lockName in d, creating it when create is
// set and it does not exist, and maps it. Every refusal wraps ErrUnusable
// and says what was found; nothing is written into a mailbox that fails a
// check (SPEC §4.2 trust; see the package documentation). Other errors are
// the filesystem's (ENOSPC, EROFS, ...): the caller waits the reference way
// either way.
func Open(d *exactfs.Dir, lockName string, create bool) (*Mailbox, error) {
	name, ok := Name(lockName)
	path := d.Name() + "/" + name
	if !ok {
		return nil, &unusable{path: path, why: "its name is longer than a directory entry allows"}
	}
	f, err := d.OpenFile(name, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) && create {
		f, _, err = d.CreateWith(name, func(f *os.File) (exactfs.Identity, error) {
			if err := f.Truncate(Size); err != nil {
				return exactfs.Identity{}, err
			}
			var st unix.Stat_t
			if err := unix.Fstat(int(f.Fd()), &st); err != nil {
				return exactfs.Identity{}, err
			}
			return exactfs.Identity{Dev: st.Dev, Ino: st.Ino, Nlink: uint64(st.Nlink), Size: st.Size,
				MtimeNs: st.Mtim.Nano(), CtimeNs: st.Ctim.Nano(), Mode: 0o600}, nil
		})
		if errors.Is(err, exactfs.ErrDestinationExists) {
			f, err = d.OpenFile(name, os.O_RDWR, 0)
		}
	}
	if err != nil {
		return nil, err
	}
	st, err := check(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := local(d, name, st); err != nil {
		f.Close()
		return nil, &unusable{path: path, why: err.Error()}
	}
	mem, err := sys.MmapShared(int(f.Fd()), Size)
	if err != nil {
		f.Close()
		return nil, &unusable{path: path, why: "it cannot be mapped shared: " + err.Error()}
	}
	m := &Mailbox{f: f, mem: mem, Dev: st.Dev, Ino: st.Ino, path: path}
	// A seat's descriptor is a new open file description of this very
	// inode (its seat lock must be its own, apart from every other seat's
	// and from this process's grant bytes), opened through /proc so that
	// no name is looked up again and the directory need not stay open.
	m.reopen = func() (*os.File, error) {
		fd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return nil, err
		}
		var gs unix.Stat_t
		if err := unix.Fstat(fd, &gs); err != nil || gs.Dev != st.Dev || gs.Ino != st.Ino {
			unix.Close(fd)
			return nil, &unusable{path: path, why: "a second descriptor on it names another file"}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
	return m, nil
}

// check is the trust rule for the mailbox, through its descriptor: a
// regular file of our euid, one link, mode 0600, exactly Size bytes.
func check(f *os.File, path string) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return st, err
	}
	euid := uint32(os.Geteuid())
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return st, &unusable{path: path, why: "it is not a regular file"}
	case st.Uid != euid:
		return st, &unusable{path: path, why: fmt.Sprintf("it is owned by uid %d, not by us (uid %d)", st.Uid, euid)}
	case st.Nlink != 1:
		return st, &unusable{path: path, why: fmt.Sprintf("it has %d links, not one", st.Nlink)}
	case st.Mode&0o7777 != 0o600:
		return st, &unusable{path: path, why: fmt.Sprintf("its mode is %04o, not 0600", st.Mode&0o7777)}
	case st.Size != Size:
		return st, &unusable{path: path, why: fmt.Sprintf("it is %d bytes, not %d", st.Size, Size)}
	}
	return st, nil
}

// local is the test the abandoned-write rule rests on (SPEC §4.4): the
// kernel answers the lease probe for this file, which it does only for a
// filesystem it alone serves (not NFS, not a cluster filesystem), where a
// shared mapping's stores are seen by every process that maps the file.
// The probe through a read-only descriptor meets our own writable one, so
// the answer expected is "open for writing".
func local(d *exactfs.Dir, name string, want unix.Stat_t) error {
	r, err := d.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer r.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(r.Fd()), &st); err != nil {
		return err
	}
	if st.Dev != want.Dev || st.Ino != want.Ino {
		return errors.New("its name now names another file")
	}
	switch err := sys.ProbeNoWriter(int(r.Fd())); {
	case err == nil, errors.Is(err, sys.ErrWouldBlock):
		return nil
	default:
		return fmt.Errorf("the kernel cannot tell who has it open here (%v): not a local filesystem", err)
	}
}
