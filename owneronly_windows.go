package exactfs

import (
	"errors"
	"os"
	"syscall"

	"github.com/exactfs/exactfs/internal/sys"
)

// Owner-only on Windows is a security descriptor, not a mode: the owner
// is the current user's SID and the DACL allows that SID alone (see
// internal/sys's OwnerOnly for the exact rules). What the store asks for
// maps onto it as follows.
//
//   - A directory must carry a protected DACL: nothing inherited from its
//     parent, so a change higher up the tree never reaches it, and what is
//     created inside it inherits the one owner entry.
//   - A file's DACL may be inherited (from such a directory) or its own;
//     either way every entry must allow the owner alone.
//   - Apply never adopts another user's object (owner_mismatch), as chown
//     is never called on Unix. The one owner it does replace is the one
//     this process gives to what it creates: an administrator running
//     elevated creates objects owned by BUILTIN\Administrators, which
//     sys.MakeOwnerOnly makes the user's.
//   - Apply reads the descriptor back and proves it: a system that accepts
//     the change and keeps nothing (Wine) fails with acl_verify_failed,
//     never silently.
//
// While internal/sys's gate is shut (every program, until issue 22 step 4
// opens it), both refuse with acl_unavailable, as before.
func ownerOnly(op string, f *os.File, apply bool) error {
	return sys.Control(f, func(fd int) error { return ownerOnlyFD(op, f.Name(), fd, apply) })
}

func ownerOnlyFD(op, path string, fd int, apply bool) error {
	st, err := sys.Fstat(fd)
	if errors.Is(err, sys.ErrUnsupported) {
		return ownerErr(op, path, CodeACLUnavailable,
			"owner-only security cannot be proved on Windows yet (issue 22): exactfs fails closed rather than trust a DACL it has not checked", err)
	}
	if err != nil {
		return ownerErr(op, path, CodeIOError, "reading the object's type through its handle failed", err)
	}
	var kind ownerKind
	switch {
	case st.Mode.IsDir():
		kind = ownerDir
	case st.Mode.IsRegular():
		kind = ownerFile
	default:
		return ownerErr(op, path, CodeNotRegularFile, "is "+KindName(st.Mode)+", neither a regular file nor a directory; refusing", nil)
	}
	protected := kind == ownerDir
	err = sys.OwnerOnly(fd, protected)
	if err == nil || !apply {
		return aclRefusal(op, path, kind, err)
	}
	if errors.Is(err, sys.ErrNotOwner) {
		mine, oerr := sys.OwnedByDefaultOwner(fd)
		if oerr != nil {
			return aclRefusal(op, path, kind, oerr)
		}
		if !mine {
			// Never adopt: an object another user owns is not ours to
			// take, whatever its DACL lets us do.
			return aclRefusal(op, path, kind, err)
		}
	}
	if errors.Is(err, sys.ErrACLUnavailable) {
		return aclRefusal(op, path, kind, err)
	}
	if err := sys.MakeOwnerOnly(fd, kind == ownerDir); err != nil {
		var ae *sys.ACLError
		if errors.As(err, &ae) && !errors.Is(err, sys.ErrACLUnavailable) {
			// The DACL was written, but what reads back is not it.
			return aclErr("verify", path, CodeACLVerifyFailed, ACLQuery, ACLAccess,
				"an owner-only DACL was written to the "+kind.String()+", but the system did not keep it (Wine, for one, accepts DACLs and keeps none); what reads back", err)
		}
		if errors.Is(err, syscall.EACCES) {
			return aclErr(op, path, CodeACLDenied, ACLClear, ACLAccess,
				"writing the owner-only DACL was refused: this user may not change the "+kind.String()+"'s security", err)
		}
		if errors.As(err, &ae) {
			return aclRefusal(op, path, kind, err)
		}
		return aclErr(op, path, CodeACLApplyFailed, ACLClear, ACLAccess, "writing the owner-only DACL failed", err)
	}
	return nil
}

// aclRefusal maps a refusal of sys.OwnerOnly to the store's codes, with
// what was found and what the user can do.
func aclRefusal(op, path string, kind ownerKind, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sys.ErrUnsupported):
		return ownerErr(op, path, CodeACLUnavailable,
			"owner-only security cannot be proved on Windows yet (issue 22): exactfs fails closed rather than trust a DACL it has not checked", err)
	case errors.Is(err, sys.ErrNotOwner):
		return ownerErr(op, path, CodeOwnerMismatch,
			"exactfs never takes ownership of another user's "+kind.String()+"; use one this user created", err)
	case errors.Is(err, sys.ErrACLUnavailable):
		return ownerErr(op, path, CodeACLUnavailable,
			"the volume keeps no ACLs (FAT or exFAT), so nothing on it can be owner-only; put the store on an NTFS or ReFS volume", err)
	case errors.Is(err, sys.ErrACLUnknown):
		return aclErr(op, path, CodeACLUnknown, ACLQuery, ACLAccess,
			"remove that entry from the "+kind.String()+"'s DACL (or make it owner-only) and try again", err)
	case errors.Is(err, sys.ErrACLPresent):
		return aclErr(op, path, CodeACLPresent, ACLQuery, ACLAccess,
			"the "+kind.String()+" is not owner-only; make it so with store.ApplyOwnerOnlyPath (or Repair when opening the store)", err)
	case errors.Is(err, syscall.EACCES):
		return aclErr(op, path, CodeACLDenied, ACLQuery, ACLAccess,
			"reading the "+kind.String()+"'s security descriptor was refused", err)
	}
	return aclErr(op, path, CodeACLIOError, ACLQuery, ACLAccess,
		"reading the "+kind.String()+"'s security descriptor failed", err)
}
