package main

import (
	"fmt"
	"strings"

	"github.com/exactfs/exactfs"
)

// The CLI opens every path it is given through the library, which follows
// the system's own root-owned symlinks at the start of a path and nothing
// else (exactfs.SystemPath; the package doc's "System symlinks"). Where the
// CLI itself reports or passes on a path (EXACTFS_LOCK_PATH, the demo's
// directory), it rewrites it first with exactfs.SystemPath, so that what it
// prints is the path that was opened.

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
