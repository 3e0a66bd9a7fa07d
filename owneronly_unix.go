//go:build unix

package exactfs

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/exactfs/exactfs/internal/sys"
)

func ownerOnly(op string, f *os.File, apply bool) error {
	return sys.Control(f, func(fd int) error { return ownerOnlyFD(op, f.Name(), fd, apply) })
}

func ownerOnlyFD(op, path string, fd int, apply bool) error {
	st, err := sys.Fstat(fd)
	if err != nil {
		return ownerErr(op, path, CodeIOError, "fstat failed", err)
	}
	var kind ownerKind
	switch {
	case st.Mode.IsDir():
		kind = ownerDir
	case st.Mode.IsRegular():
		kind = ownerFile
	default:
		return ownerErr(op, path, CodeNotRegularFile, "neither a regular file nor a directory; refusing", nil)
	}
	if euid := os.Geteuid(); int(st.Uid) != euid {
		// Never chown: a file someone else owns is not ours to adopt.
		return ownerErr(op, path, CodeOwnerMismatch,
			fmt.Sprintf("owned by uid %d, not by the effective uid %d", st.Uid, euid), nil)
	}
	want := kind.perm()
	if apply {
		if sys.PermBits(st.Mode) != want {
			if err := sys.Fchmod(fd, want); err != nil {
				return ownerErr(op, path, CodeIOError, "fchmod failed", err)
			}
		}
		// The mode is set before the ACL is cleared: on Linux a chmod
		// rewrites the mask entry of an access ACL, but only the removal
		// takes the named entries away.
		for _, attr := range aclAttributes(kind) {
			if err := aclClear(op, path, fd, attr); err != nil {
				return err
			}
			if err := aclQuery(op, path, fd, attr); err != nil {
				return err
			}
		}
		// Verify what we did, from the descriptor again.
		op = "verify"
	}
	if st, err = sys.Fstat(fd); err != nil {
		return ownerErr(op, path, CodeIOError, "fstat failed", err)
	}
	if int(st.Uid) != os.Geteuid() {
		return ownerErr(op, path, CodeOwnerMismatch, fmt.Sprintf("owned by uid %d", st.Uid), nil)
	}
	if got := sys.PermBits(st.Mode); got != want {
		return ownerErr(op, path, CodeModeMismatch,
			fmt.Sprintf("mode %v, want %v (owner-only %s)", fs.FileMode(got).Perm(), fs.FileMode(want).Perm(), kind), nil)
	}
	for _, attr := range aclAttributes(kind) {
		if err := aclQuery(op, path, fd, attr); err != nil {
			return err
		}
	}
	return nil
}
