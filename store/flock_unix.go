//go:build unix

package store

import (
	"os"

	"github.com/exactfs/exactfs"
	"golang.org/x/sys/unix"
)

// tryLockExclusive takes flock(LOCK_EX|LOCK_NB) on f. Reclaimers of one
// record hold it while they exact-unlink the record, so two of them never
// run the exchange-based unlink on one name at once: interleaved, they can
// leave an exactfs placeholder at the lock name that neither removes. The
// lock is released when f is closed.
func tryLockExclusive(f *os.File) error {
	return withFD(f, func(fd int) error {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == unix.EWOULDBLOCK {
			return newErr("reclaim", f.Name(), CodeLeaseBusy, "another process is reclaiming this record", err)
		}
		return err
	})
}

// fileInode returns the device and inode of an open file.
func fileInode(f *os.File) (exactfs.Identity, error) {
	var id exactfs.Identity
	err := withFD(f, func(fd int) error {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		id.Dev, id.Ino = uint64(st.Dev), uint64(st.Ino)
		return nil
	})
	return id, err
}
