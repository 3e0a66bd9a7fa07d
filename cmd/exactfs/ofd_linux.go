package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// ofdHeld asks the kernel whether any open file description holds a lock on
// f's inode. An exactfs holder keeps one on its owner record for as long as
// it holds the lock, so "none" proves such a holder gone.
func ofdHeld(f *os.File) (held, known bool) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart}
	for {
		err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false, false
		}
		return lk.Type != unix.F_UNLCK, true
	}
}
