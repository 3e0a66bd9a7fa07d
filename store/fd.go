package store

import (
	"context"
	"os"
	"time"

	"github.com/exactfs/exactfs"
)

// fileInode returns the device and inode of an open file.
func fileInode(f *os.File) (exactfs.Identity, error) { return exactfs.StatFile(f) }

// dirLockMaxPause is the longest pause between two tries of lockDir.
const dirLockMaxPause = 5 * time.Millisecond

// lockDir takes an exclusive flock on a new open of the directory d (a new
// open file description, so goroutines of one process exclude each other
// too) and returns the function that releases it. It waits, with backoff,
// up to dirLockWait or until ctx is done (then the error is interrupted and
// matches ctx's error). See Store.commitGuard for why. The new open goes
// through d's methods, which hold a reference: d may be the store's root,
// which a concurrent Close may release.
func lockDir(ctx context.Context, d *exactfs.Dir) (unlock func(), err error) {
	own, err := d.OpenDir(".")
	if err != nil {
		return nil, newErr("lock", d.Name(), exactfs.CodeOf(err), "the directory could not be opened to lock it", err)
	}
	deadline := time.Now().Add(dirLockWait)
	pause := 100 * time.Microsecond
	for {
		ok, err := own.TryLock()
		if ok {
			return func() { own.Close() }, nil
		}
		if err != nil {
			own.Close()
			return nil, newErr("lock", d.Name(), exactfs.CodeIOError, "the directory could not be locked", err)
		}
		if time.Now().After(deadline) {
			own.Close()
			return nil, newErr("lock", d.Name(), CodeLeaseBusy, "another writer kept the directory's commit lock for "+dirLockWait.String(), nil)
		}
		if err := sleepCtx(ctx, pause); err != nil {
			own.Close()
			return nil, newErr("lock", d.Name(), exactfs.CodeInterrupted, "gave up waiting for the directory's commit lock", err)
		}
		pause = min(2*pause, dirLockMaxPause)
	}
}

// sleepCtx waits for d, or returns ctx's error as soon as ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
