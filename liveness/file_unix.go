//go:build unix

package liveness

import (
	"fmt"
	"io/fs"
	"os"
)

func checkConfigRootMode(dir string, mode fs.FileMode) error {
	if mode.Perm()&0o022 != 0 {
		return fmt.Errorf("liveness: config root %s is writable by other users (mode %v); run chmod 0700 on it", dir, mode.Perm())
	}
	return nil
}

// tightenSecretMode makes an existing secret owner-only, as the TypeScript
// peers do when they read it, through the descriptor that was proved to be
// a regular file (a chmod by name could follow a swapped-in symlink).
func tightenSecretMode(f *os.File, fi fs.FileInfo) error {
	if fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	return f.Chmod(0o600)
}
