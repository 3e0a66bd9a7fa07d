//go:build unix

package main

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/exactfs/exactfs"
)

// noteRootOwned tells root, after its update or write of path, when path is
// root's but its directory is another user's: the library gives a new file
// to whoever creates it (as open(2) does), so root's one-off update or
// write of a state file that did not exist yet leaves a root-owned 0600 file
// in the user's directory, which the user's own processes can then neither
// read nor update (exit 74), while the lock's records beside it are the
// user's. exactfs does not chown it by itself (the library's rule for a new
// file stands); it says so, with the command that fixes it.
func noteRootOwned(e *env, cmd, path string) {
	if os.Geteuid() != 0 {
		return
	}
	d, name, err := openParent(path)
	if err != nil || d == nil {
		return
	}
	defer d.Close()
	dir, err := d.StatRaw()
	if err != nil || dir.Uid == 0 {
		return
	}
	st, err := d.LstatRaw(name)
	if err != nil || st.Uid != 0 || !st.Mode.IsRegular() {
		return
	}
	what := "update"
	if st.Mode.Perm()&0o004 == 0 {
		what = "read or update"
	}
	fmt.Fprintf(e.stderr, "exactfs %s: note: %s is root's (mode %04o) in a directory of %s, whose processes cannot %s it; if they should, run: chown %d:%d %s\n",
		cmd, path, st.Mode.Perm(), uidName(dir.Uid), what, dir.Uid, dir.Gid, shellJoin([]string{path}))
}

// refuseForeignOwner refuses, before update runs CMD, a state file that
// the write at the end could never replace: another uid's file, for a
// caller that is not root (it cannot give the successor that owner), or,
// even for root, one in a shared sticky directory (/tmp) that its owner
// does not own (exactfs.WriteFile's rule: there anyone may have planted
// the name). Without it CMD ran, with whatever it does besides printing,
// and only the write was refused. Absent and non-regular files are left to
// the write, which reports them in its own words.
func refuseForeignOwner(d *exactfs.Dir, name, op, path string) error {
	st, err := d.LstatRaw(name)
	if err != nil || !st.Mode.IsRegular() {
		return nil
	}
	euid := uint32(os.Geteuid())
	if st.Uid == euid {
		return nil
	}
	dir, err := d.StatRaw()
	if err != nil {
		return nil
	}
	sticky := dir.Mode&fs.ModeSticky != 0 && dir.Mode.Perm()&0o022 != 0 && dir.Uid != st.Uid
	if euid == 0 && !sticky {
		return nil
	}
	why := "this process cannot give the new file that owner, and taking the file from its owner is not an update"
	if sticky {
		why = "it sits in a shared sticky directory that its owner does not own, where anyone may plant a file at a name: " +
			"the new file can be neither its owner's (that would hand them what is written) nor this process's"
	}
	return &exactfs.Error{Op: op, Path: path, Code: exactfs.CodePermissionDenied,
		Detail: fmt.Sprintf("refusing to update it: the file belongs to %s and %s; CMD was not run and nothing was changed. "+
			"Update it as %s, or remove it first if the name should be yours", uidName(st.Uid), why, uidName(st.Uid))}
}
