//go:build unix

package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/exactfs/exactfs"
	"golang.org/x/sys/unix"
)

// makeStateDirForOwner is --mkdir run as root: it makes the missing
// directories of stateFile's directory itself, each owned by the owner of
// the directory it is made in, before the library sees the path.
//
// Why: the library makes them as whoever runs it, and a lock makes its
// records owned by the owner of the directory they live in (so that root's
// one-off lock in a service's directory leaves files the service can use).
// A directory root made in a user's tree was root's, 0700: every record in
// it became root's too, and the user's own processes were locked out of the
// lock for good (exit 74), with nothing to say that root had done it.
//
// Only a directory this call made is given away, and only while it is
// still what mkdir made (root's, empty): a directory someone else put at
// the name in between is used as it is and never chowned. A parent owned by
// root keeps root's directories (the usual case for /var/lib/…).
// Failures are left to the library, which reports them with its own words.
func makeStateDirForOwner(stateFile string) {
	if os.Geteuid() != 0 {
		return
	}
	dir := filepath.Dir(filepath.Clean(exactfs.SystemPath(stateFile)))
	var missing []string
	p := dir
	var d *exactfs.Dir
	for {
		var err error
		d, err = exactfs.OpenDir(p)
		if err == nil {
			break
		}
		parent := filepath.Dir(p)
		if !errors.Is(err, fs.ErrNotExist) || parent == p {
			return
		}
		missing = append(missing, filepath.Base(p))
		p = parent
	}
	defer func() { d.Close() }()
	for i := len(missing) - 1; i >= 0; i-- {
		name := missing[i]
		parent, err := d.StatRaw()
		if err != nil {
			return
		}
		made := d.Mkdir(name, 0o700) == nil
		child, err := d.OpenDir(name)
		if err != nil {
			return
		}
		d.Close()
		d = child
		if !made || parent.Uid == 0 {
			continue
		}
		st, err := d.StatRaw()
		if err != nil || st.Uid != 0 || st.Nlink != 2 {
			continue // not (or no longer) the empty directory we made
		}
		_ = d.Use(func(fd int) error { return unix.Fchown(fd, int(parent.Uid), int(parent.Gid)) })
	}
}
