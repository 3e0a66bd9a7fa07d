package liveness

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/sys"
)

// The owner-only rules of the config root and the secret on Windows.
//
// On Unix they read and set mode bits (0700, 0600). On Windows permissions
// are the DACL, and the mode bits Go synthesizes there say nothing about
// who may write. Owner-only is what sys.OwnerOnly proves: the owner SID is
// the current user's, and the DACL allows that SID alone (protected from
// inheritance, for the config root). A secret others could replace would
// let them make this host's records look foreign (never reclaimed) or
// another installation's look local.
//
// Like the file primitives, these checks sit behind internal/sys's gate:
// until it opens they refuse, and so does LoadHostIdentity. Wine keeps no
// DACL, so there they refuse even with the gate open; that they accept
// what sys.MakeOwnerOnly writes is shown on real Windows only
// (.ci/wine/needs-real-windows.md).

// mkdirOwnerOnly makes the directory name beneath d owner-only from its
// creation: NtCreateFile is given the owner-only security descriptor
// (sys.MkdirOwnerOnly), so there is no moment at which the directory
// carries what it would inherit from its parent and someone that let in
// could put a file in it or keep a handle to it. openConfigRoot then
// proves the config root with sys.OwnerOnly, as any existing one.
func mkdirOwnerOnly(d *exactfs.Dir, name string) error {
	err := d.Use(func(fd int) error { return sys.MkdirOwnerOnly(fd, name) })
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrExist):
		return err
	case errors.Is(err, sys.ErrACLUnavailable):
		return fmt.Errorf("cannot make %s owner-only: %w; name a config root on an NTFS or ReFS volume", filepath.Join(d.Name(), name), err)
	}
	return fmt.Errorf("making %s owner-only: %w", filepath.Join(d.Name(), name), err)
}

// sealSecret gives the secret this process has just published its own
// owner-only security descriptor (sys.MakeOwnerOnly: owner the current
// user, a protected DACL for that user alone, read back and proved). It
// was owner-only from its creation already, by the one entry it inherited
// from the config root proved owner-only; sealed, it stays so if that
// root's DACL is ever changed, and an elevated process's secret is owned
// by the user, not by Administrators. The handle is a no-follow open of a
// regular file beneath the checked root.
func sealSecret(d *exactfs.Dir, file string) error {
	f, err := d.OpenFile(SecretFileName, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("liveness: making installation secret %s owner-only: %w", file, err)
	}
	defer f.Close()
	if err := sys.MakeOwnerOnly(int(f.Fd()), false); err != nil {
		return fmt.Errorf("liveness: installation secret %s was created, but giving it an owner-only DACL of its own failed "+
			"(it keeps the one entry it inherits from the config root, which allows only you): %w; "+
			"run again, and if this persists check that the volume keeps ACLs and that this account may change the file's security", file, err)
	}
	return nil
}

// checkConfigRoot proves the directory d is bound to owner-only, as it
// is now.
func checkConfigRoot(dir string, d *exactfs.Dir) error {
	f, err := d.File()
	if err != nil {
		return fmt.Errorf("liveness: config root: %w", err)
	}
	defer f.Close()
	return checkConfigRootHandle(dir, f)
}

// checkConfigRootHandle is checkConfigRoot on an open directory. An
// existing config root that is not owner-only is refused, never repaired:
// its secret may already be someone else's.
func checkConfigRootHandle(dir string, f *os.File) error {
	err := sys.OwnerOnly(int(f.Fd()), true)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sys.ErrNotOwner), errors.Is(err, sys.ErrACLPresent), errors.Is(err, sys.ErrACLUnknown):
		return fmt.Errorf("liveness: config root %s is not owner-only (%w); "+
			"give only your own account access to it, through a protected DACL that inherits nothing "+
			"(for example: icacls \"%s\" /inheritance:r /grant:r \"%%USERNAME%%:(OI)(CI)F\", then remove any other entry it lists), "+
			"or name a config root that does not exist yet, which exactfs creates owner-only "+
			"(a root the TypeScript peers made inherits its parent's DACL and needs this once)", dir, err, dir)
	}
	return fmt.Errorf("liveness: config root %s: cannot prove that only its owner may access it: %w", dir, err)
}

// tightenSecretMode makes an existing secret owner-only, as the Unix
// version does with chmod 0600 (and the TypeScript peers when they read
// it), through the handle proved to be a regular file: a secret that is
// ours but lets others in gets an owner-only DACL, and so does one owned
// by the owner this process gives to what it creates (an elevated
// administrator's files are owned by Administrators, which can read
// everything anyway); one owned by any other account, or with entries
// this check does not understand, is refused.
func tightenSecretMode(f *os.File, _ fs.FileInfo) error {
	fd := int(f.Fd())
	err := sys.OwnerOnly(fd, false)
	tighten := errors.Is(err, sys.ErrACLPresent)
	if errors.Is(err, sys.ErrNotOwner) {
		ours, oerr := sys.OwnedByDefaultOwner(fd)
		tighten = oerr == nil && ours
	}
	if tighten {
		err = sys.MakeOwnerOnly(fd, false)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sys.ErrNotOwner), errors.Is(err, sys.ErrACLPresent), errors.Is(err, sys.ErrACLUnknown):
		return fmt.Errorf("it is not owner-only (%w); restore it from a backup with only your account given access, "+
			"or delete it to create a new one (this changes the host id)", err)
	}
	return fmt.Errorf("cannot prove that only its owner may read it: %w", err)
}
