package exactfs

import (
	"os"
	"syscall"

	"github.com/exactfs/exactfs/internal/sys"
)

// CreateWith creates name beneath d, complete before it has its name, and
// never replaces, for a file whose creator must act on it before its bytes
// exist (a lock record whose OFD lock readers ask the kernel about): the
// file is created exclusively, without following a symlink, mode 0600,
// read-write, under a private staging name beside name (the one Publish
// uses, which StagingTarget recognizes); fill writes it through that
// descriptor and returns the identity of what it wrote; a no-replace
// rename then gives it name. CreateWith returns the descriptor, still
// open, and fill's identity with the change time of the published name.
//
// Nothing is fsynced: a caller whose bytes must survive a power cut fsyncs
// the file in fill, and d after the call (Publish is the durable create).
// A name that exists is destination_exists before anything is created.
// Where the filesystem has no no-replace rename, the result is
// atomic_unavailable with nothing left behind: there is no link fallback,
// the caller chooses its own way. If fill or the rename fails, the staged
// file is removed while its name still holds it (an unknown rename outcome
// keeps it, named in the error's Residue). The staging name must still
// hold the file fill wrote just before the rename (a file another process
// renamed over it is left there, never published: identity_mismatch), and
// name must hold it just after (otherwise, whether a file renamed over the
// staging name in the few system calls between that check and the rename
// was published or another process removed or replaced ours right after,
// the result is identity_mismatch too, as the statelock records expect).
func (d *Dir) CreateWith(name string, fill func(f *os.File) (Identity, error)) (*os.File, Identity, error) {
	const op = "create"
	path := d.join(name)
	p, base, err := resolve(op, d, name)
	if err != nil {
		return nil, Identity{}, err
	}
	defer p.close()
	if _, err := sys.Lstat(p.fd, base); err == nil {
		return nil, Identity{}, &Error{Op: op, Path: path, Code: CodeDestinationExists, Err: syscall.EEXIST}
	}
	s, err := createPending(op, path, p.fd, base, StagingSuffix, os.O_RDWR)
	if err != nil {
		return nil, Identity{}, err
	}
	f := os.NewFile(uintptr(s.fd), path)
	s.fd = -1 // f owns the descriptor now
	abandon := func(err error) (*os.File, Identity, error) {
		f.Close()
		return nil, Identity{}, s.failed(err)
	}
	id, err := fill(f)
	if err != nil {
		return abandon(err)
	}
	// The rename is by name: the staging name must still hold the file
	// fill wrote (see stillStaged); the check after the rename covers the
	// window this leaves.
	if err := s.stillStaged(); err != nil {
		return abandon(err)
	}
	if err := sys.RenameNoReplace(p.fd, s.name, p.fd, base); err != nil {
		switch c, e := settle(op, path, err, s.st, p.fd, s.name, p.fd, base, true); c {
		case NotCommitted:
			if err == syscall.EEXIST {
				e.(*Error).Code = CodeDestinationExists
			}
			return abandon(e)
		case Unknown:
			e := e.(*Error)
			e.Residue = s.residue()
			e.Detail = "the result of the rename is unknown; the staged file is kept"
			f.Close()
			return nil, Identity{}, e
		}
	}
	at, err := sys.Lstat(p.fd, base)
	if err != nil || at.Dev != s.st.Dev || at.Ino != s.st.Ino {
		f.Close()
		return nil, Identity{}, &Error{Op: op, Path: path, Code: CodeIdentityMismatch,
			Detail: "the name no longer holds the file just published; it is another process's now"}
	}
	id.CtimeNs = at.CtimeNs
	return f, id, nil
}
