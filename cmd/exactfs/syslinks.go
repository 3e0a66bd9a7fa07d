package main

import (
	"fmt"
	"strings"

	"github.com/exactfs/exactfs"
)

// The CLI opens every path it is given through the library, which follows
// the system's own root-owned symlinks at the start of a path and nothing
// else (exactfs.SystemPath; the package doc's "System symlinks"). What the
// CLI prints spells a path as the user gave it (status, recover, doctor,
// lock and update pass the argument on as given; the demo's banner
// uses exactfs.AsGiven),
// so that on macOS a path under TMPDIR reads /var/folders/…, not
// /private/var/folders/…, although that is where the walk goes. What it
// passes on to a child (EXACTFS_LOCK_PATH) is the resolved path that was
// opened (lockEnv): one spelling however STATEFILE was spelled, which a
// program that refuses symlinks can open as it is.

// symlinkHint says what to do about a refusal caused by a symlink among
// the directories of path, or returns "". The library's error has already
// named the symlink and its target.
func symlinkHint(path string) string {
	link, _, ok := exactfs.SymlinkInPath(path)
	if !ok {
		return ""
	}
	return fmt.Sprintf("Do not remove it (%s): the only symlinks followed are the system's own (%s) at the start of a path, "+
		"when root owns them and every directory they lead through",
		link, strings.Join(exactfs.SystemSymlinks(), ", "))
}
