package main

import (
	"path/filepath"

	"github.com/exactfs/exactfs"
)

// openParent opens the directory holding path, without following a symlink
// in any component, and returns it with the final name. Every file operation
// of the CLI goes through the returned *exactfs.Dir: the operation then works
// on the directory that was opened even if a path component is swapped
// meanwhile, and the directory's own descriptor is what gets fsynced.
//
// name is "" when path names a directory itself (".", "/", "dir/.."), which
// only stat accepts.
//
// A trusted system symlink at the start of path (exactfs.SystemPath) is resolved
// first; any other symlink is refused by the walk.
func openParent(path string) (d *exactfs.Dir, name string, err error) {
	clean := filepath.Clean(exactfs.SystemPath(path))
	dir, base := filepath.Split(clean)
	if base == "" || base == "." || base == ".." || base == string(filepath.Separator) {
		return nil, "", nil
	}
	if dir == "" {
		dir = "."
	}
	d, err = exactfs.OpenDir(dir)
	if err != nil {
		return nil, "", err
	}
	return d, base, nil
}

// withParent runs fn on the parent directory of path and the final name, and
// closes the directory afterwards. A path that names no file is a usage error.
func withParent(path string, fn func(d *exactfs.Dir, name string) error) error {
	d, name, err := openParent(path)
	if err != nil {
		return err
	}
	if d == nil {
		return usagef("%q names a directory, not a file", path)
	}
	defer d.Close()
	return fn(d, name)
}
