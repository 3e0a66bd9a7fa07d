package exactfs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/exactfs/exactfs/internal/sys"
)

// fsType names the filesystem of fd from statfs f_type.
func fsType(fd int) (name string, network bool) {
	magic, err := sys.FSMagic(fd)
	if err != nil {
		return "unknown (statfs: " + err.Error() + ")", false
	}
	if n, ok := magics[magic]; ok {
		return n.name, n.network
	}
	return fmt.Sprintf("unknown (0x%x)", magic), false
}

type fsName struct {
	name    string
	network bool
}

// magics maps statfs f_type values (linux/magic.h) to names.
var magics = map[uint32]fsName{
	0xEF53:     {"ext4", false}, // ext2/3/4 share the magic
	0x58465342: {"xfs", false},
	0x01021994: {"tmpfs", false},
	0x9123683E: {"btrfs", false},
	0x2FC12FC1: {"zfs", false},
	0xF2F52010: {"f2fs", false},
	0x794C7630: {"overlay", false},
	0x858458F6: {"ramfs", false},
	0x4D44:     {"vfat", false},
	0x2011BAB0: {"exfat", false},
	0x5346544E: {"ntfs", false},
	0x65735546: {"fuse", false},
	0x6969:     {"nfs", true},
	0xFF534D42: {"cifs", true},
	0xFE534D42: {"smb2", true},
	0x517B:     {"smb", true},
	0x01021997: {"9p", true},
	0x00C36400: {"ceph", true},
	0x0BD00BD0: {"lustre", true},
	0x01161970: {"gfs2", true},
	0x7461636F: {"ocfs2", true},
	0x6B414653: {"afs", true},
	0x73717368: {"squashfs", false},
	0x9FA0:     {"proc", false},
	0x62656572: {"sysfs", false},
}

// probeACL sets an extended POSIX access ACL (a named-user entry, which mode
// bits cannot express, so the filesystem must store it), reads it back and
// removes it.
func probeACL(fd int) ProbeResult {
	const attr = "system.posix_acl_access"
	acl := posixACL(uint32(os.Getuid()))
	if err := sys.Fsetxattr(fd, attr, acl); err != nil {
		if errors.Is(err, syscall.EOPNOTSUPP) {
			return ProbeResult{false, "no POSIX ACLs on this filesystem (EOPNOTSUPP)"}
		}
		return ProbeResult{false, "setting an ACL failed: " + errnoText(err)}
	}
	buf := make([]byte, 256)
	n, err := sys.Fgetxattr(fd, attr, buf)
	if err != nil || n == 0 {
		return ProbeResult{false, "an ACL was accepted but could not be read back"}
	}
	if err := sys.Fremovexattr(fd, attr); err != nil {
		return ProbeResult{false, "an ACL was set but could not be removed: " + errnoText(err)}
	}
	if _, err := sys.Fgetxattr(fd, attr, buf); !errors.Is(err, syscall.ENODATA) {
		return ProbeResult{false, "an ACL was removed but is still reported"}
	}
	return ProbeResult{true, "POSIX ACLs can be set, read, cleared and verified absent"}
}

// posixACL encodes the xattr form of the ACL "u::rw-,u:<uid>:r--,g::---,m::r--,o::---".
func posixACL(uid uint32) []byte {
	const (
		userObj  = 0x01
		user     = 0x02
		groupObj = 0x04
		mask     = 0x10
		other    = 0x20
		undef    = 0xFFFFFFFF
	)
	entries := []struct {
		tag, perm uint16
		id        uint32
	}{{userObj, 6, undef}, {user, 4, uid}, {groupObj, 0, undef}, {mask, 4, undef}, {other, 0, undef}}
	b := binary.LittleEndian.AppendUint32(nil, 2) // version
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, e.id)
	}
	return b
}

// probeOFD takes an open-file-description write lock through fd and asks,
// through a second open file description of the same file, whether the
// kernel reports it: that is how a contender learns a Go holder is alive.
func probeOFD(fd, other int) ProbeResult {
	if err := sys.OFDTryLock(fd, 0, 0); err != nil {
		return ProbeResult{false, "F_OFD_SETLK failed: " + errnoText(err)}
	}
	held, _, err := sys.OFDConflict(other, 0, 0)
	if err != nil {
		return ProbeResult{false, "F_OFD_GETLK failed: " + errnoText(err)}
	}
	if !held {
		return ProbeResult{false, "a lock was granted but a second description does not see it"}
	}
	sys.OFDUnlock(fd, 0, 0)
	return ProbeResult{true, "F_OFD_SETLK locks are taken and seen by a second open file description"}
}
