//go:build unix

package main

import (
	"fmt"
	"os"
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
