package store

import (
	"errors"
	"path/filepath"

	"github.com/exactfs/exactfs"
)

func (l *lease) fenceName() string { return l.name + ".fence" }

// Fence returns the fencing token of this acquisition. Tokens strictly
// increase across successive holders of one lease name in one directory, so
// a resource that remembers the highest token it has seen can refuse a
// write from a holder that has since been superseded.
//
// Why they increase: besides the token in the record, the locks directory
// keeps a counter file, <name>.fence, which only ever grows (it is replaced
// by compare-and-swap to max(current, ours)). A holder writes its token to
// the counter before AcquireLease returns it, while holding the lease. A new
// holder reads the counter only after it created the lock file, i.e. after
// every earlier holder's record was released or its owner proved dead, so
// after every token ever returned was written; it takes one more than the
// largest of the counter and every record it saw on the way. A holder that
// died between creating its record and writing the counter never returned
// its token to anyone, so a successor reusing that number harms nobody.
// Records are removed when they are reclaimed, which is why the counter,
// not the record, carries the sequence; deleting the counter file by hand
// restarts it (from the largest token still visible in a record).
//
// TypeScript peers write no tokens and do not read the counter: in a mixed
// deployment, tokens order the Go holders only.
func (l *Lease) Fence() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rec.Fence
}

// readFence returns the counter (0 when absent) and its identity.
func readFence(d *exactfs.Dir, name string) (uint64, *exactfs.Identity, error) {
	for range 8 {
		data, id, err := d.CaptureRecord(name)
		switch {
		case errors.Is(err, exactfs.ErrNotFound):
			return 0, nil, nil
		case errors.Is(err, exactfs.ErrChangedDuringRead):
			continue
		case err != nil:
			return 0, nil, err
		}
		v, err := parseFence(data)
		if err != nil {
			err.(*Error).Path = filepath.Join(d.Name(), name)
			return 0, nil, err
		}
		return v, &id, nil
	}
	return 0, nil, newErr("acquire", filepath.Join(d.Name(), name), exactfs.CodeChangedDuringRead, "the fence counter kept changing", nil)
}

// bumpFence raises the counter to at least want, by compare-and-swap, and
// returns the token to use: want, or one more than a larger counter.
func bumpFence(d *exactfs.Dir, name string, want uint64) (uint64, error) {
	for range 16 {
		cur, id, err := readFence(d, name)
		if err != nil {
			return 0, err
		}
		if cur >= want {
			want = cur + 1
		}
		if id == nil {
			_, err = d.Publish(name, formatFence(want), 0o600, exactfs.ExactPerm())
		} else {
			err = replaceFence(d, name, formatFence(want), *id)
		}
		switch {
		case err == nil:
			return want, nil
		case errors.Is(err, exactfs.ErrDestinationExists), errors.Is(err, exactfs.ErrIdentityMismatch), errors.Is(err, exactfs.ErrChangedDuringRead):
			continue
		}
		return 0, err
	}
	return 0, newErr("acquire", filepath.Join(d.Name(), name), exactfs.CodeIdentityMismatch, "the fence counter kept changing under compare-and-swap", nil)
}
