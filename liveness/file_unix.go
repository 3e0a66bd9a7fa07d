//go:build unix

package liveness

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// openNoFollow makes an open refuse a symlink at the final component and not
// block on a FIFO planted in place of a regular file.
const openNoFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

func openSecretNoFollow(file string) (*os.File, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|openNoFollow, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symbolic link, which is never followed; replace it with the secret file itself: %w", file, err)
	}
	return f, err
}

func checkConfigRootMode(dir string, fi fs.FileInfo) error {
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("liveness: config root %s is writable by other users (mode %v); run chmod 0700 on it", dir, fi.Mode().Perm())
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

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
