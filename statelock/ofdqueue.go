package statelock

import "github.com/exactfs/exactfs/internal/sys"

// The waiter queue, and the lock questions asked through a raw descriptor.
// Where the platform has no open-file-description locks, internal/sys
// answers every one of them with ErrUnsupported (or "not known"), so no
// waiter joins a queue and every probe finds the record unlocked: waiters
// compete, and records are judged by the pid rules alone.

func ofdHeldFd(fd uintptr) (held, known bool) { return sys.OFDHeld(int(fd), 0, queueBase) }

// queueBase splits the OFD lock space of an owner record's inode. A holder
// locks the bytes [0, queueBase): far beyond any record, and covering all
// of them. Waiters announce themselves with read locks on single bytes at
// queueBase+ticket (ticket: their arrival time), which never conflict with
// each other or with the holder's range. The kernel drops a waiter's lock
// when it dies, so the queue never holds a ghost.
const queueBase = 1 << 40

// queueJoin takes this waiter's place in the queue: a read lock on the one
// byte of its ticket, through fd (open for reading on the record's inode).
func queueJoin(fd uintptr, ticket int64) bool {
	return sys.OFDReadLock(int(fd), queueBase+ticket, 1) == nil
}

// queueLeave drops the read lock queueJoin took through fd.
func queueLeave(fd uintptr, ticket int64) {
	sys.OFDUnlock(int(fd), queueBase+ticket, 1)
}

// Who holds a kernel lock on a record's inode, as anyLock tells.
const (
	unlocked = iota
	lockedByHolder
	lockedByWaiter
)

// anyLock asks, with one F_OFD_GETLK over the whole lock space, whether
// anyone holds a lock on the inode fd is open on: the holder's range or a
// waiter's ticket. When both exist the kernel names one of them; either
// means the caller waits.
func anyLock(fd uintptr) int {
	held, start, err := sys.OFDConflict(int(fd), 0, 0)
	switch {
	case err != nil, !held:
		return unlocked
	case start < queueBase:
		return lockedByHolder
	}
	return lockedByWaiter
}

// queueAheadFd reports whether some waiter with a smaller ticket than
// ticket is queued on the inode fd is open on (ticket < 0: any waiter).
func queueAheadFd(fd uintptr, ticket int64) bool {
	var length int64 // any waiter: to the end of the lock space
	if ticket >= 0 {
		if ticket == 0 {
			return false
		}
		length = ticket
	}
	held, known := sys.OFDHeld(int(fd), queueBase, length)
	return known && held
}

// ticketNow is a waiter's arrival time on the host-wide monotonic clock.
func ticketNow() int64 {
	ns, err := sys.MonotonicNs()
	if err != nil {
		return 0
	}
	return ns
}
