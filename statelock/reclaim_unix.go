//go:build unix

package statelock

import (
	"github.com/exactfs/exactfs"
)

// guardTree takes the reclaim guard of the directory at name: an exclusive,
// non-blocking flock(2) on that directory's inode, which must be the root of
// want. Every exactfs process that removes a crashed claim directory (a
// reclaimer, Recover, the replay of a detached one) holds it from before its
// last capture until the directory is gone, so two of them never interleave
// RemoveTreeExact's compare and detach on one name: without it, a second
// reclaimer could detach a successor's live claim that took the name
// between the first one's detach and its own compare. The kernel drops the
// guard when its holder dies, so a killed reclaimer never strands it.
//
// held is false when another process holds the guard right now (contention:
// look again) or name no longer names want's directory (someone finished
// first); err is a filesystem error of the open or the lock.
func (l *locker) guardTree(name string, want exactfs.Identity) (release func(), held bool, err error) {
	d, err := l.dir.OpenDir(name)
	if err != nil {
		if exactfs.CodeOf(err) == exactfs.CodeNotFound || exactfs.CodeOf(err) == exactfs.CodeNotDirectory ||
			exactfs.CodeOf(err) == exactfs.CodeReparsePoint {
			return nil, false, nil
		}
		return nil, false, err
	}
	if dev, ino := d.Inode(); dev != want.Dev || ino != want.Ino {
		d.Close()
		return nil, false, nil
	}
	switch ok, err := d.TryLock(); {
	case err != nil:
		d.Close()
		return nil, false, err
	case !ok:
		d.Close()
		return nil, false, nil
	}
	return func() { d.Close() }, true, nil
}
