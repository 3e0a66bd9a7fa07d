package exactfs

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/exactfs/exactfs/internal/sys"
)

// The capability probe (exactfs doctor): it finds out, by trying, what the
// filesystem under a directory supports that exactfs relies on: rename
// without replace, atomic exchange, hard links, POSIX ACLs,
// open-file-description locks, and its type. It lives beside the
// primitives whose system calls it tries.
//
// Every probe runs on files it creates in a private subdirectory, which it
// removes afterwards; nothing else in the directory is touched.

// ProbeResult is the outcome of one probe.
type ProbeResult struct {
	// Supported is true when the operation worked as exactfs needs it to.
	Supported bool
	// Detail says what happened: the errno, or how support was verified.
	Detail string
}

// ProbeReport is what Probe found.
type ProbeReport struct {
	Dir             string
	FSType          string // "ext4", "nfs", ...; "unknown (0x1234)" when the magic is not known
	Network         bool   // a network or cluster filesystem shared between hosts
	RenameNoReplace ProbeResult
	Exchange        ProbeResult
	HardLink        ProbeResult
	ACL             ProbeResult
	OFDLock         ProbeResult
}

// Probe probes the filesystem of d. It fails only when it cannot create its
// private subdirectory in d; each probe's own failure is a ProbeResult. It
// works beneath d's own descriptor (holding a reference to it), so the
// directory probed is the one d was opened on, whatever its path names
// meanwhile.
func (d *Dir) Probe() (r *ProbeReport, err error) {
	err = d.use("probe", func(dfd int) error {
		r, err = probeIn(dfd, d.path)
		return err
	})
	return r, err
}

func probeIn(dfd int, dir string) (*ProbeReport, error) {
	r := &ProbeReport{Dir: dir}
	err := inProbeDir(dfd, dir, func(tfd int, created map[string]bool) error {
		mk := func(n, content string) error {
			fd, err := sys.Open(tfd, n, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				return err
			}
			created[n] = true
			defer sys.Close(fd)
			return sys.Write(fd, []byte(content))
		}
		r.FSType, r.Network = fsType(tfd)
		if err := mk("a", "a"); err != nil {
			return fmt.Errorf("create a probe file in %s: %w", dir, err)
		}
		if err := mk("b", "b"); err != nil {
			return fmt.Errorf("create a probe file in %s: %w", dir, err)
		}

		// Rename without replace must move to a free name and refuse an existing
		// destination. The VFS itself answers EEXIST for an existing destination
		// on some filesystems that reject the flag (FUSE), so the free name is
		// tried first.
		src := "a"
		switch err := sys.RenameNoReplace(tfd, "a", tfd, "c"); {
		case err != nil:
			r.RenameNoReplace = ProbeResult{false, errnoText(err)}
		default:
			delete(created, "a")
			created["c"] = true
			src = "c"
			switch err := sys.RenameNoReplace(tfd, "c", tfd, "b"); {
			case errors.Is(err, syscall.EEXIST):
				r.RenameNoReplace = ProbeResult{true, "renames to a free name, refuses an existing destination (EEXIST)"}
			case err == nil:
				delete(created, "c")
				src = "b"
				r.RenameNoReplace = ProbeResult{false, "DANGER: the rename replaced an existing file despite the no-replace flag"}
			default:
				r.RenameNoReplace = ProbeResult{false, "renamed to a free name, but failed on an existing destination: " + errnoText(err)}
			}
		}

		// Exchange must swap the two names' contents: src holds "a", b holds "b".
		if src == "b" {
			r.Exchange = ProbeResult{false, "not probed: the no-replace rename destroyed a probe file"}
		} else if err := sys.Exchange(tfd, src, tfd, "b"); err != nil {
			r.Exchange = ProbeResult{false, errnoText(err)}
		} else if got := readSmall(tfd, "b"); got != "a" {
			r.Exchange = ProbeResult{false, fmt.Sprintf("the exchange returned success but %q holds %q", "b", got)}
		} else {
			r.Exchange = ProbeResult{true, "swaps two names atomically"}
		}

		// A hard link must name the same inode. exactfs checks that after a
		// link, so a filesystem that reports it wrongly fails its fallback too.
		if err := sys.Link(tfd, "b", tfd, "d"); err != nil {
			r.HardLink = ProbeResult{false, errnoText(err)}
		} else {
			created["d"] = true
			sb, err1 := sys.Lstat(tfd, "b")
			sd, err2 := sys.Lstat(tfd, "d")
			switch {
			case err1 != nil || err2 != nil:
				r.HardLink = ProbeResult{false, "link(2) succeeded but the names cannot be examined"}
			case sb.Dev != sd.Dev || sb.Ino != sd.Ino:
				r.HardLink = ProbeResult{false, fmt.Sprintf("link(2) succeeded but the two names report different inodes (%d, %d)", sb.Ino, sd.Ino)}
			case sb.Nlink != 2:
				r.HardLink = ProbeResult{true, fmt.Sprintf("link(2) works, but the filesystem reports a link count of %d instead of 2", sb.Nlink)}
			default:
				r.HardLink = ProbeResult{true, "link(2) works (the publish fallback where rename flags are missing)"}
			}
		}

		fd, err := sys.Open(tfd, "b", os.O_RDWR, 0)
		if err != nil {
			r.ACL = ProbeResult{false, "could not open the probe file: " + errnoText(err)}
			r.OFDLock = r.ACL
			return nil
		}
		defer sys.Close(fd)
		r.ACL = probeACL(fd)
		fd2, err := sys.Open(tfd, "b", os.O_RDWR, 0)
		if err != nil {
			r.OFDLock = ProbeResult{false, "could not open the probe file twice: " + errnoText(err)}
			return nil
		}
		defer sys.Close(fd2)
		r.OFDLock = probeOFD(fd, fd2)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// inProbeDir makes a private subdirectory of dfd (the directory dir) and
// runs f in it; f records in created each name it makes there, and they
// and the subdirectory are removed afterwards, whatever f returns.
func inProbeDir(dfd int, dir string, f func(tfd int, created map[string]bool) error) error {
	name := fmt.Sprintf(".exactfs-doctor-%d-%x", os.Getpid(), randomWord())
	if err := sys.Mkdir(dfd, name, 0o700); err != nil {
		return fmt.Errorf("create a probe directory in %s: %w", dir, err)
	}
	tfd, err := sys.OpenDir(dfd, name)
	if err != nil {
		sys.Rmdir(dfd, name)
		return fmt.Errorf("open the probe directory %s in %s: %w", name, dir, err)
	}
	created := map[string]bool{}
	defer func() {
		for n := range created {
			sys.Unlink(tfd, n)
		}
		sys.Close(tfd)
		sys.Rmdir(dfd, name)
	}()
	return f(tfd, created)
}

func readSmall(dirfd int, name string) string {
	fd, err := sys.Open(dirfd, name, os.O_RDONLY, 0)
	if err != nil {
		return ""
	}
	defer sys.Close(fd)
	buf := make([]byte, 16)
	n, _ := sys.Pread(fd, buf, 0)
	return string(buf[:max(n, 0)])
}

func randomWord() uint32 {
	var b [4]byte
	rand.Read(b[:])
	return binary.BigEndian.Uint32(b[:])
}

// errnoText names the errno inside err and what it means here.
func errnoText(err error) string {
	var en syscall.Errno
	switch {
	case errors.Is(err, sys.ErrUnsupported):
		return "unsupported on this platform (exactfs fails closed)"
	case errors.As(err, &en) && (en == syscall.EINVAL || en == syscall.ENOSYS):
		return fmt.Sprintf("%s (%v): the filesystem or kernel does not support it", errnoName(en), en)
	case errors.As(err, &en) && isNotSupported(en):
		return fmt.Sprintf("%s (%v): not supported by this filesystem", errnoName(en), en)
	case errors.As(err, &en):
		return fmt.Sprintf("%s (%v)", errnoName(en), en)
	}
	return err.Error()
}
