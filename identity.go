package exactfs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/exactfs/exactfs/internal/sys"
)

// Identity is what exactfs proves about an object before it removes or
// replaces it: the inode (Dev, Ino), its link count, size and times from one
// fstat of a descriptor, and for regular files the SHA-256 of the exact
// bytes read through that same descriptor.
//
// CtimeNs is recorded but compared only where a rule says so: chmod, ACL
// tools, indexers and even rename change it without changing the file.
//
// Uid and Gid are the owner and group from the same fstat. They are what a
// replace gives its successor (see WriteFile), not part of the proof: Equal
// leaves them out (a chown changes CtimeNs, which Equal compares), and
// String does not record them, so an identity read back by ParseIdentity
// has them zero and still equals the one it was printed from.
type Identity struct {
	Dev, Ino uint64
	Nlink    uint64
	Size     int64
	MtimeNs  int64
	CtimeNs  int64
	Mode     fs.FileMode // type and permission bits
	SHA256   [32]byte    // zero for directories
	Uid, Gid uint32      // owner and group; not compared (see above)
}

func identityOf(st sys.Stat, sum [32]byte) Identity {
	return Identity{
		Dev: st.Dev, Ino: st.Ino, Nlink: st.Nlink, Size: st.Size,
		MtimeNs: st.MtimeNs, CtimeNs: st.CtimeNs, Mode: st.Mode, SHA256: sum,
		Uid: st.Uid, Gid: st.Gid,
	}
}

// SameInode reports whether a and b name the same inode.
func (id Identity) SameInode(o Identity) bool { return id.Dev == o.Dev && id.Ino == o.Ino }

// SameContent reports whether id and o are the same inode with the same
// size, modification time and bytes. This is the proof exact unlink
// requires; link count and ctime are left out because the operations that
// move a file (rename, exchange) change them.
func (id Identity) SameContent(o Identity) bool {
	return id.SameInode(o) && id.Size == o.Size && id.MtimeNs == o.MtimeNs && id.SHA256 == o.SHA256 &&
		id.Mode.Type() == o.Mode.Type()
}

// Equal reports whether every recorded field, ctime and link count
// included, is the same; the owner and group are not compared (see
// Identity). Compare-and-swap uses it.
func (id Identity) Equal(o Identity) bool {
	id.Uid, id.Gid, o.Uid, o.Gid = 0, 0, 0, 0
	return id == o
}

// diff describes for a person how found differs from id.
func (id Identity) diff(found Identity) string {
	var parts []string
	if !id.SameInode(found) {
		parts = append(parts, fmt.Sprintf("expected inode %d on device %#x, found inode %d on device %#x", id.Ino, id.Dev, found.Ino, found.Dev))
	}
	if id.Size != found.Size {
		parts = append(parts, fmt.Sprintf("expected %d bytes, found %d", id.Size, found.Size))
	}
	if id.MtimeNs != found.MtimeNs {
		parts = append(parts, fmt.Sprintf("modification time %d, expected %d", found.MtimeNs, id.MtimeNs))
	}
	if id.SHA256 != found.SHA256 {
		parts = append(parts, "different bytes (sha256 "+hex.EncodeToString(found.SHA256[:8])+"…, expected "+hex.EncodeToString(id.SHA256[:8])+"…)")
	}
	if id.Nlink != found.Nlink {
		parts = append(parts, fmt.Sprintf("%d links, expected %d", found.Nlink, id.Nlink))
	}
	if id.CtimeNs != found.CtimeNs {
		parts = append(parts, "status change time differs")
	}
	if id.Mode != found.Mode {
		parts = append(parts, fmt.Sprintf("mode %v, expected %v", found.Mode, id.Mode))
	}
	if len(parts) == 0 {
		return "identical"
	}
	return strings.Join(parts, "; ")
}

const identityPrefix = "v1"

// String encodes the identity as one word that ParseIdentity reads back,
// for command lines and logs: v1:dev:ino:nlink:size:mtimeNs:ctimeNs:mode:sha256.
func (id Identity) String() string {
	return strings.Join([]string{
		identityPrefix,
		strconv.FormatUint(id.Dev, 16),
		strconv.FormatUint(id.Ino, 10),
		strconv.FormatUint(id.Nlink, 10),
		strconv.FormatInt(id.Size, 10),
		strconv.FormatInt(id.MtimeNs, 10),
		strconv.FormatInt(id.CtimeNs, 10),
		strconv.FormatUint(uint64(id.Mode), 8),
		hex.EncodeToString(id.SHA256[:]),
	}, ":")
}

// ParseIdentity reads the form written by Identity.String.
func ParseIdentity(s string) (Identity, error) {
	bad := func(why string) (Identity, error) {
		return Identity{}, &Error{Op: "parse identity", Path: s, Code: CodeInvalidRequest,
			Detail: "not an identity as printed by exactfs stat (" + why + ")"}
	}
	f := strings.Split(s, ":")
	if len(f) != 9 || f[0] != identityPrefix {
		return bad("want v1 and 8 fields separated by ':'")
	}
	var id Identity
	var err error
	var mode uint64
	if id.Dev, err = strconv.ParseUint(f[1], 16, 64); err != nil {
		return bad("device")
	}
	if id.Ino, err = strconv.ParseUint(f[2], 10, 64); err != nil {
		return bad("inode")
	}
	if id.Nlink, err = strconv.ParseUint(f[3], 10, 64); err != nil {
		return bad("link count")
	}
	if id.Size, err = strconv.ParseInt(f[4], 10, 64); err != nil {
		return bad("size")
	}
	if id.MtimeNs, err = strconv.ParseInt(f[5], 10, 64); err != nil {
		return bad("mtime")
	}
	if id.CtimeNs, err = strconv.ParseInt(f[6], 10, 64); err != nil {
		return bad("ctime")
	}
	if mode, err = strconv.ParseUint(f[7], 8, 32); err != nil {
		return bad("mode")
	}
	id.Mode = fs.FileMode(mode)
	sum, err := hex.DecodeString(f[8])
	if err != nil || len(sum) != 32 {
		return bad("sha256")
	}
	copy(id.SHA256[:], sum)
	return id, nil
}

func sum256(data []byte) [32]byte { return sha256.Sum256(data) }
