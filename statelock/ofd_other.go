//go:build (!linux && !windows) || exactfs_portable

package statelock

import (
	"errors"
	"os"
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
