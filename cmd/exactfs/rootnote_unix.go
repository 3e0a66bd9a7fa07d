//go:build unix

package main

import (
	"fmt"
	"os"
)

// noteRootOwned tells root, after its update or write of path, when path is
// root's but its directory is another user's. A new file is no longer left
// so: update and write give it to the directory's owner
// (exactfs.DirOwnerForNewFile), as the lock's records beside it are. What
// the note still catches is a file that was root's already (a replace
// keeps its predecessor's owner, and exactfs does not hand root's file to
// anyone by itself), or one made by write --no-replace: the user's
// processes can then neither read nor update it (exit 74), so root is told,
// with the command that fixes it.
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
