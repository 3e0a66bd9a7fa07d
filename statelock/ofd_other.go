//go:build (!linux && !windows) || exactfs_portable

package statelock

import (
	"errors"
	"os"

	"github.com/exactfs/exactfs"
)

// ofdSupported is false here: records are judged by the pid rules alone.
const ofdSupported = false

// kernelAttest is false here: no holder takes a kernel lock, no record
// claims one, and kernelRule is never asked.
const kernelAttest = false

func kernelRule(*Record, string) bool { return false }

var (
	errOFDConflict    = errors.New("another descriptor holds a kernel lock on the record")
	errOFDUnsupported = errors.New("the filesystem does not support OFD locks")
)

// ofdLock does nothing where OFD locks do not exist; the records we write
// here carry no kernel evidence fields, so nobody asks the kernel about them.
func ofdLock(*os.File) error { return nil }

// ofdUnlock has no lock to drop here.
func ofdUnlock(*os.File) {}

// ofdHeld cannot answer here.
func ofdHeld(*os.File) (held, known bool) { return false, false }

// probe and probeLocks have no kernel locks to ask about here.
type probeFd struct {
	fd  int
	ino uint64
}

func (l *locker) openProbe(string) probeFd                     { return probeFd{fd: -1} }
func (l *locker) lookProbe(string) (exactfs.LockFD, func())    { return -1, nil }
func (p probeFd) close()                                       {}
func (l *locker) probeLocks(string, func(exactfs.LockFD)) bool { return false }
