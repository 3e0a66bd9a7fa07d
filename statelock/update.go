package statelock

import (
	"context"
	"errors"
	"io/fs"

	"github.com/exactfs/exactfs"
)

// Update is the read-modify-write helper: lock stateFile; read it (nil when
// absent); call fn; if fn fails, leave the file untouched; otherwise replace
// it atomically and durably (exactfs WriteFile: a staged file, fsync,
// rename, fsync of the directory); release. The new file keeps the
// permission bits of the one it replaces (a replace must not silently
// change who may read the state); a state file Update creates is 0600.
//
// A process killed at any instant leaves the state file with the old bytes
// or the new ones, and a lock that the next caller reclaims at once (its
// owner is provably dead). Concurrent Updates, from any number of processes
// and from TypeScript peers running the reference lock, lose no update. If
// the read, fn or the write fails and the release fails too, both errors
// are returned (errors.Join).
func Update(ctx context.Context, stateFile string, fn func(old []byte) ([]byte, error), opts ...Option) error {
	h, err := Lock(ctx, stateFile, opts...)
	if err != nil {
		return err
	}
	opErr := h.update(fn)
	return errors.Join(opErr, h.Unlock())
}

func (h *Held) update(fn func(old []byte) ([]byte, error)) error {
	d, name := h.l.dir, h.l.base
	old, perm, err := readState(d, name)
	if err != nil {
		return err
	}
	next, err := fn(old)
	if err != nil {
		return err
	}
	_, err = d.WriteFile(name, next, perm)
	return err
}

// readState reads the state file through a no-follow descriptor whose type
// is proved regular (a symlink or FIFO planted at F is refused, never read
// through): exactfs Capture, so a read that overlaps a write by someone who
// ignores the lock fails (changed_during_read) instead of returning a torn
// file. Absent means nil. perm is the mode the successor gets: the file's
// own permission bits, from the descriptor the bytes were read through, or
// 0600 for a file that does not exist yet.
func readState(d *exactfs.Dir, name string) (data []byte, perm fs.FileMode, err error) {
	data, id, err := d.Capture(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0o600, nil
	}
	return data, id.Mode.Perm(), err
}
