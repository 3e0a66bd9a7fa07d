//go:build !unix

package liveness

import (
	"fmt"
	"io/fs"
	"os"
)

// openNoFollow is empty where the platform has no O_NOFOLLOW; the secret is
// then checked with Lstat before the open and Stat after it.
const openNoFollow = 0

func openSecretNoFollow(file string) (*os.File, error) {
	before, err := os.Lstat(file)
	if err != nil {
		return nil, err
	}
	if !before.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%v)", file, before.Mode().Type())
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	after, err := f.Stat()
	if err != nil || !os.SameFile(before, after) {
		f.Close()
		return nil, fmt.Errorf("%s changed while it was being opened", file)
	}
	return f, nil
}

func checkConfigRootMode(string, fs.FileInfo) error { return nil }

func tightenSecretMode(*os.File, fs.FileInfo) error { return nil }

// syncDir is a no-op: directories cannot be opened for fsync here, and the
// platform's own metadata journaling is all there is.
func syncDir(string) error { return nil }
