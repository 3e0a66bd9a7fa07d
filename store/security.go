package store

import (
	"os"

	"github.com/exactfs/exactfs"
)

// Kind is what an owner-only object must be.
type Kind int

const (
	// File is a regular file; owner-only means mode 0600.
	File Kind = iota + 1
	// Directory is a directory; owner-only means mode 0700 and, on Linux,
	// no default ACL either (it would be inherited by what is created in
	// it).
	Directory
)

func (k Kind) String() string {
	if k == Directory {
		return "directory"
	}
	return "file"
}

// ApplyOwnerOnly makes the open file or directory f owner-only: it checks
// that the effective user owns it (it never changes the owner:
// owner_mismatch), sets the mode to exactly 0600 (file) or 0700
// (directory) with fchmod, clears the ACL (Linux: the POSIX ACL
// attributes, with fremovexattr; macOS: the extended ACL, with
// fsetattrlist, when a query does not prove it absent) and queries it
// again, and finally verifies the result. Everything is done on the
// descriptor, so a path swapped for a link in the meantime cannot redirect
// it. It is exactfs.ApplyOwnerOnly, where the proof lives.
func ApplyOwnerOnly(f *os.File) error { return exactfs.ApplyOwnerOnly(f) }

// VerifyOwnerOnly checks, without changing anything, that f is owned by the
// effective user, has mode exactly 0600 or 0700, and carries no ACL
// (exactfs.VerifyOwnerOnly).
func VerifyOwnerOnly(f *os.File) error { return exactfs.VerifyOwnerOnly(f) }

// ApplyOwnerOnlyPath opens path as kind without following a symlink in any
// component (a symlink is reparse_point; a FIFO or other object is
// not_directory / not_regular_file, refused without blocking) and applies
// ApplyOwnerOnly to the descriptor.
func ApplyOwnerOnlyPath(path string, kind Kind) error {
	return ownerOnlyPath("apply", path, kind, true)
}

// VerifyOwnerOnlyPath opens path like ApplyOwnerOnlyPath and verifies it.
func VerifyOwnerOnlyPath(path string, kind Kind) error {
	return ownerOnlyPath("verify", path, kind, false)
}

func ownerOnlyPath(op, path string, kind Kind, apply bool) error {
	f, err := openKind(path, kind)
	if err != nil {
		return err
	}
	defer f.Close()
	if apply {
		return exactfs.ApplyOwnerOnly(f)
	}
	return exactfs.VerifyOwnerOnly(f)
}

// openKind opens path as kind through the exactfs walker, which refuses a
// symlink in any component.
func openKind(path string, kind Kind) (*os.File, error) {
	if kind == Directory {
		d, err := exactfs.OpenDir(path)
		if err != nil {
			return nil, err
		}
		defer d.Close()
		return d.File()
	}
	return exactfs.OpenFile(path, os.O_RDONLY, 0)
}
