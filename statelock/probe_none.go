//go:build !linux || exactfs_portable

package statelock

import "github.com/exactfs/exactfs"

// Without OFD locks there is no waiter queue and no F_GETLK, so there is
// nothing to look at through a probe descriptor (lock.go's look and peek,
// the queue of acquire.go): the probe is never open.
type probeFd struct {
	fd  int
	ino uint64
}

func (l *locker) openProbe(string) probeFd                  { return probeFd{fd: -1} }
func (l *locker) lookProbe(string) (exactfs.LockFD, func()) { return -1, nil }
func (l *locker) lookProbeAt(string) (exactfs.LockFD, [2]uint64, func()) {
	return -1, [2]uint64{}, nil
}
func (p probeFd) close()                                       {}
func (l *locker) probeLocks(string, func(exactfs.LockFD)) bool { return false }
