package statelock

import (
	"errors"
	"io/fs"
	"os"

	"github.com/exactfs/exactfs"
)

// guardByte is the byte of the claim's sidecar (F.lock.transition.owner)
// whose LockFileEx is the reclaim guard on Windows: beyond the
// attestation range [2^39, 2^40) (ofd_windows.go), so a taker's
// attestation and a reclaimer's guard never meet, and far beyond the
// record's bytes, which a Windows lock would hide from every reader.
const guardByte = 1 << 41

// guardTree takes the reclaim guard of the crashed claim at name (the
// claim directory, or its detached name claim+".removing"), whose root
// must be want's directory: on Unix a flock on the directory itself
// (reclaim_unix.go), which Windows cannot take (LockFileEx refuses a
// directory handle, and a lock file inside the claim would keep it from
// ever being empty). Here the guard is LockFileEx, exclusive and without
// waiting, on guardByte of the claim's sidecar, through a handle of the
// guard's own: every exactfs reclaimer of the claim (a contender, Recover,
// the replay of a detached claim) takes it on the same file, by the same
// name, from before its last capture until the directory is gone, so two
// of them never interleave RemoveTreeExact's compare and detach. Windows
// drops the lock with the handle, however its holder ends.
//
// held is false when another handle holds the guard (contention: look
// again) or name no longer names want's directory. Where it cannot be
// taken, as before it existed, the removal goes unguarded and relies on
// RemoveTreeExact's own checks: a claim without a sidecar file (which
// only explicit recovery removes), and trees that are no claim (a legacy
// F.lock/ directory, whose files are the tree's own: a handle on one
// would keep the directory from being removed).
func (l *locker) guardTree(name string, want exactfs.Identity) (release func(), held bool, err error) {
	if name != l.claim && name != l.claim+exactfs.RemovingSuffix {
		return func() {}, true, nil
	}
	f, err := l.dir.OpenFile(l.sidecar, os.O_RDONLY, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return func() {}, true, nil
	case transientBusy(err):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	ok, err := exactfs.TryLockRange(f, exactfs.LockExclusive, guardByte, 1)
	switch {
	case err != nil:
		f.Close()
		if exactfs.CodeOf(err) == exactfs.CodeUnsupported {
			return func() {}, true, nil // no byte-range locks here: unguarded, as before
		}
		return nil, false, err
	case !ok:
		f.Close()
		return nil, false, nil
	}
	fi, err := l.dir.Lstat(name)
	if err != nil || !fi.IsDir() {
		f.Close()
		return nil, false, nil
	}
	if id, ok := fi.Sys().(exactfs.Identity); !ok || !id.SameInode(want) {
		f.Close()
		return nil, false, nil
	}
	return func() { f.Close() }, true, nil
}
