package sys

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Owner-only on Windows (issue 22, steps 3 and 5).
//
// Unix says "owner-only" with mode bits (0700, 0600). Windows says it with
// a security descriptor: the owner SID is the current user's, and the DACL
// is present, protected (nothing inherited from the parent, so a later
// change up the tree does not reach it) and allows access to that SID
// alone. That is exactly what OwnerOnly accepts and MakeOwnerOnly writes.
// It is strict: an ACE for SYSTEM or Administrators (which Windows puts on
// most user directories) is refused like any other, as Unix's 0700 refuses
// group and other bits; and a process running elevated owns what it
// creates as BUILTIN\Administrators by default, which MakeOwnerOnly
// replaces by the user's SID, so verification never needs a special case
// for it.
//
// Wine keeps no DACL (SetSecurityInfo succeeds and nothing changes;
// GetSecurityInfo synthesizes SYSTEM, the user and Everyone), so under Wine
// OwnerOnly refuses everything and only the refusal, and the evaluation of
// descriptors built in memory, can be tested there. That the written DACL
// persists and is read back as written needs real Windows
// (.ci/wine/needs-real-windows.md).

// The reasons OwnerOnly refuses, matched with errors.Is.
var (
	// ErrNotOwner: the object is owned by another SID than the current
	// user's.
	ErrNotOwner = errors.New("not owned by the current user")
	// ErrACLPresent: the DACL is missing or NULL (everyone has access),
	// not protected (where that is asked for), or allows access to
	// another SID.
	ErrACLPresent = errors.New("the DACL gives access to others than the owner")
	// ErrACLUnknown: the DACL holds an ACE of a type this package does not
	// evaluate (a deny ACE, an object or callback ACE).
	ErrACLUnknown = errors.New("the DACL holds an entry this check does not understand")
	// ErrACLUnavailable: the volume keeps no ACLs (FAT, exFAT), so nothing
	// can be owner-only there.
	ErrACLUnavailable = errors.New("the file system keeps no ACLs")
)

// ACLError is a refusal of OwnerOnly: which rule (Err, one of the errors
// above) and what was found.
type ACLError struct {
	Err    error
	Detail string
}

func (e *ACLError) Error() string { return e.Err.Error() + ": " + e.Detail }

func (e *ACLError) Unwrap() error { return e.Err }

// OwnerOnly proves that only the current user may access the object fd is
// open on (fd needs READ_CONTROL, which every handle of this package has):
// see the top of this file. protected also requires the DACL to be
// protected from inheritance; a file inside a directory proved owner-only
// may carry the entries it inherited from it. It fails with an *ACLError,
// or with the system's error (EACCES when the descriptor cannot be read).
func OwnerOnly(fd int, protected bool) error {
	if !ready {
		return ErrUnsupported
	}
	return ownerOnly(h(fd), protected)
}

func ownerOnly(fh windows.Handle, protected bool) error {
	if err := persistentACLs(fh); err != nil {
		return err
	}
	me, err := currentUser()
	if err != nil {
		return err
	}
	sd, err := windows.GetSecurityInfo(fh, windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return errnoOf(err)
	}
	if wineOwnerOnly {
		return checkOwner(sd, me) // a test under Wine (WineOwnerOnlyForTest)
	}
	return checkOwnerOnly(sd, me, protected)
}

// persistentACLs refuses a volume that keeps no ACLs.
func persistentACLs(fh windows.Handle) error {
	var flags uint32
	if err := windows.GetVolumeInformationByHandle(fh, nil, 0, nil, nil, &flags, nil, 0); err != nil {
		return errnoOf(err)
	}
	if flags&windows.FILE_PERSISTENT_ACLS == 0 {
		return &ACLError{ErrACLUnavailable, "the volume does not keep ACLs (FAT or exFAT?); use an NTFS or ReFS volume"}
	}
	return nil
}

// currentUser is the user SID of the process token (impersonation is
// not considered: exactfs does not impersonate).
func currentUser() (*windows.SID, error) {
	tu, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return nil, fmt.Errorf("reading the process token's user: %w", err)
	}
	return tu.User.Sid, nil
}

// defaultOwner is the SID the process token makes the owner of the
// objects the process creates: the user, or BUILTIN\Administrators for an
// administrator running elevated (unless policy says otherwise).
func defaultOwner() (*windows.SID, error) {
	t := windows.GetCurrentProcessToken()
	n := uint32(64)
	for {
		b := make([]byte, n)
		err := windows.GetTokenInformation(t, windows.TokenOwner, &b[0], uint32(len(b)), &n)
		if err == nil {
			// TOKEN_OWNER is one pointer to a SID inside the same buffer.
			owner := (*windows.Tokenprimarygroup)(unsafe.Pointer(&b[0])).PrimaryGroup
			return owner.Copy()
		}
		if err != windows.ERROR_INSUFFICIENT_BUFFER || n <= uint32(len(b)) {
			return nil, fmt.Errorf("reading the process token's default owner: %w", err)
		}
	}
}

// OwnedByDefaultOwner reports whether the object fd is open on (fd needs
// READ_CONTROL) is owned by the SID this process gives to what it
// creates: true for what this process, or another of the same user and
// elevation, created. OwnerOnly refuses an object an elevated process
// created (its owner is BUILTIN\Administrators, not the user); a caller
// that would tighten its own file with MakeOwnerOnly asks this first.
func OwnedByDefaultOwner(fd int) (bool, error) {
	if !ready {
		return false, ErrUnsupported
	}
	sd, err := windows.GetSecurityInfo(h(fd), windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		return false, errnoOf(err)
	}
	def, err := defaultOwner()
	if err != nil {
		return false, err
	}
	return ownedBy(sd, def), nil
}

func ownedBy(sd *windows.SECURITY_DESCRIPTOR, sid *windows.SID) bool {
	owner, _, err := sd.Owner()
	return err == nil && owner != nil && owner.Equals(sid)
}

// sidName is a SID as people read it: DOMAIN\account (S-1-...), or the
// string form alone.
func sidName(sid *windows.SID) string {
	s := sid.String()
	if account, domain, _, err := sid.LookupAccount(""); err == nil {
		if domain != "" {
			account = domain + `\` + account
		}
		return account + " (" + s + ")"
	}
	return s
}

// checkOwnerOnly is the evaluation of OwnerOnly on a security descriptor.
func checkOwnerOnly(sd *windows.SECURITY_DESCRIPTOR, me *windows.SID, protected bool) error {
	if err := checkOwner(sd, me); err != nil {
		return err
	}
	control, _, err := sd.Control()
	if err != nil {
		return err
	}
	dacl, _, err := sd.DACL()
	switch {
	case errors.Is(err, windows.ERROR_OBJECT_NOT_FOUND) || control&windows.SE_DACL_PRESENT == 0:
		return &ACLError{ErrACLPresent, "there is no DACL, so everyone has full access"}
	case err != nil:
		return err
	case dacl == nil:
		return &ACLError{ErrACLPresent, "the DACL is NULL, so everyone has full access"}
	}
	if protected && control&windows.SE_DACL_PROTECTED == 0 {
		return &ACLError{ErrACLPresent, "the DACL is not protected: it inherits entries from the parent directory"}
	}
	for i := uint32(0); i < uint32(dacl.AceCount); i++ {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &ace); err != nil {
			return err
		}
		if ace.Header.AceType != windows.ACCESS_ALLOWED_ACE_TYPE {
			return &ACLError{ErrACLUnknown, fmt.Sprintf("entry %d is of type %d, not a plain allow entry", i, ace.Header.AceType)}
		}
		sid := (*windows.SID)(unsafe.Pointer(&ace.SidStart))
		if !sid.Equals(me) {
			return &ACLError{ErrACLPresent, fmt.Sprintf("entry %d allows access (mask %#x) to %s", i, ace.Mask, sidName(sid))}
		}
	}
	return nil
}

// checkOwner is the owner half of checkOwnerOnly: sd names me as the
// owner.
func checkOwner(sd *windows.SECURITY_DESCRIPTOR, me *windows.SID) error {
	owner, _, err := sd.Owner()
	if err != nil || owner == nil {
		return &ACLError{ErrNotOwner, "the security descriptor names no owner"}
	}
	if !owner.Equals(me) {
		return &ACLError{ErrNotOwner, fmt.Sprintf("owned by %s, not by %s", sidName(owner), sidName(me))}
	}
	return nil
}

// MakeOwnerOnly makes the object fd is open on owner-only: the current
// user becomes its owner, and its DACL a protected one with one entry that
// allows that user everything (inherited by files and subdirectories when
// dir is set). It then reads the descriptor back and proves it with
// OwnerOnly, so a system that accepts the change and keeps nothing (Wine)
// fails here rather than later.
func MakeOwnerOnly(fd int, dir bool) error {
	if !ready {
		return ErrUnsupported
	}
	return makeOwnerOnly(fd, dir)
}

func makeOwnerOnly(fd int, dir bool) error {
	if wineOwnerOnly {
		// A test under Wine (WineOwnerOnlyForTest): nothing written would
		// be kept; the owner is what can be proved.
		return ownerOnly(h(fd), dir)
	}
	var options uint32 = windows.FILE_NON_DIRECTORY_FILE
	if dir {
		options = windows.FILE_DIRECTORY_FILE
	}
	me, err := currentUser()
	if err != nil {
		return err
	}
	// The owner may always rewrite the DACL; changing the owner needs
	// WRITE_OWNER, asked for only when there is something to change (an
	// object created while elevated is owned by Administrators).
	what := windows.SECURITY_INFORMATION(windows.DACL_SECURITY_INFORMATION | windows.PROTECTED_DACL_SECURITY_INFORMATION)
	access := uint32(windows.READ_CONTROL | windows.WRITE_DAC | windows.FILE_READ_ATTRIBUTES)
	owner := (*windows.SID)(nil)
	sd, err := windows.GetSecurityInfo(h(fd), windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		return errnoOf(err)
	}
	if o, _, err := sd.Owner(); err != nil || o == nil || !o.Equals(me) {
		what |= windows.OWNER_SECURITY_INFORMATION
		access |= windows.WRITE_OWNER
		owner = me
	}
	wh, err := reopen(h(fd), access, shareAll, options)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(wh)
	if err := persistentACLs(wh); err != nil {
		return err
	}
	sd, err = ownerOnlyDescriptor(dir)
	if err != nil {
		return err
	}
	acl, _, err := sd.DACL()
	if err != nil {
		return fmt.Errorf("building an owner-only DACL: %w", err)
	}
	if err := windows.SetSecurityInfo(wh, windows.SE_FILE_OBJECT, what, owner, nil, acl, nil); err != nil {
		return errnoOf(err)
	}
	return ownerOnly(wh, true)
}

// MkdirOwnerOnly creates the directory name (one component, no separator)
// beneath the directory dirfd, owner-only from its first instant: the
// security descriptor MakeOwnerOnly would write (owner the current user,
// a protected DACL with one entry allowing that user everything,
// inherited by what is created inside) is given to NtCreateFile itself.
// Made by Mkdir and then MakeOwnerOnly, the directory would carry what it
// inherited from its parent until the second call, and anyone that
// inheritance let in could create a file in it or open it meanwhile. It
// fails with EEXIST when anything is at name (never adopting it), and
// with an *ACLError (ErrACLUnavailable) before creating anything when
// dirfd's volume keeps no ACLs. What the system kept is not read back
// here: the caller proves the directory with OwnerOnly on a handle it
// opened, as it proves one it did not create (Wine, which keeps no DACL,
// refuses there, not here).
func MkdirOwnerOnly(dirfd int, name string) error {
	if !ready {
		return ErrUnsupported
	}
	if dirfd == AtCWD {
		return syscall.EINVAL // a directory handle, not the working directory
	}
	return mkdirOwnerOnly(h(dirfd), name)
}

func mkdirOwnerOnly(dir windows.Handle, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return syscall.EINVAL
	}
	rel, err := ntName(name)
	if err != nil {
		return err
	}
	if err := persistentACLs(dir); err != nil {
		return err
	}
	sd, err := ownerOnlyDescriptor(true)
	if err != nil {
		return err
	}
	u, err := windows.NewNTUnicodeString(rel)
	if err != nil {
		return syscall.EINVAL
	}
	oa := windows.OBJECT_ATTRIBUTES{RootDirectory: dir, ObjectName: u, Attributes: windows.OBJ_CASE_INSENSITIVE, SecurityDescriptor: sd}
	oa.Length = uint32(unsafe.Sizeof(oa))
	var dh windows.Handle
	var iosb windows.IO_STATUS_BLOCK
	err = windows.NtCreateFile(&dh, windows.FILE_LIST_DIRECTORY|windows.SYNCHRONIZE, &oa, &iosb, nil,
		windows.FILE_ATTRIBUTE_NORMAL, shareAll, windows.FILE_CREATE,
		windows.FILE_DIRECTORY_FILE|windows.FILE_OPEN_REPARSE_POINT|windows.FILE_SYNCHRONOUS_IO_NONALERT, 0, 0)
	if err != nil {
		return errnoOf(err)
	}
	return errnoOf(windows.CloseHandle(dh))
}

// ownerOnlyDescriptor is the security descriptor of an owner-only object
// (see the top of this file), as MakeOwnerOnly writes it: owner the
// current user, a protected DACL whose one entry allows that user every
// right (FA: FILE_ALL_ACCESS), inherited by files and subdirectories (OICI)
// when dir is set.
func ownerOnlyDescriptor(dir bool) (*windows.SECURITY_DESCRIPTOR, error) {
	me, err := currentUser()
	if err != nil {
		return nil, err
	}
	inherit := ""
	if dir {
		inherit = "OICI"
	}
	u := me.String()
	sd, err := windows.SecurityDescriptorFromString("O:" + u + "D:P(A;" + inherit + ";FA;;;" + u + ")")
	if err != nil {
		return nil, fmt.Errorf("building an owner-only security descriptor: %w", err)
	}
	return sd, nil
}
