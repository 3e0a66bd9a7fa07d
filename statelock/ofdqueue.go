package statelock

import (
	"errors"
	"sync"
	"syscall"
	"time"

	"github.com/exactfs/exactfs/internal/sys"
)

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

// slotBase is where the kernel slots begin (SPEC §4.8.1): a holder whose
// record carries "ofd_slot": N holds a shared lock on the one byte
// slotBase+N of the record's inode instead of the whole range
// [0, queueBase). The slots lie inside that range on purpose: a judge
// that knows no slots (an older exactfs) asks about the whole range, finds
// the slot lock and reads the holder as alive, the safe side. N is the
// holder's pidfd inode, unique to its process for the life of the boot, so
// no later process ever holds the byte of a dead holder's slot (a judge
// that held it itself would read the dead record as alive, forever).
const slotBase = 1 << 39

// validSlot reports whether n may name a kernel slot: its byte lies in
// [slotBase, queueBase).
func validSlot(n uint64) bool { return n > 0 && n < queueBase-slotBase }

// slotOf is the kernel slot of a process whose pidfd inode is ino, or 0
// (no slot: the cohort is off, the record is attested by the whole range).
// liveness reports 0 for the inode of a pidfd that is not on pidfs (Linux
// before 6.9, where every pidfd shares one anonymous inode and a number
// would name every process at once).
func slotOf(ino uint64) uint64 {
	if validSlot(ino) {
		return ino
	}
	return 0
}

// slotLock takes the shared lock on the byte of slot n of the inode fd is
// open on (fd open for reading). errOFDConflict: an exclusive lock is
// there (an older exactfs holder's whole-range lock).
func slotLock(fd uintptr, n uint64) error {
	switch err := sys.OFDReadLock(int(fd), slotBase+int64(n), 1); {
	case err == nil:
		return nil
	case errors.Is(err, sys.ErrUnsupported), errors.Is(err, syscall.ENOLCK), errors.Is(err, syscall.EINVAL),
		errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.ENOSYS):
		return errOFDUnsupported
	case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EACCES):
		return errOFDConflict
	default:
		return err
	}
}

// slotHeld asks the kernel whether another open file description holds a
// lock on the byte of slot n of the inode fd is open on.
func slotHeld(fd uintptr, n uint64) (held, known bool) {
	return sys.OFDHeld(int(fd), slotBase+int64(n), 1)
}

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
	c, _ := anyLockAt(fd)
	return c
}

// anyLockAt is anyLock, and also whether the lock the kernel named is a
// kernel slot (SPEC §4.8.1: a Go cohort owner's, or a seated waiter's).
func anyLockAt(fd uintptr) (class int, slot bool) {
	held, start, err := sys.OFDConflict(int(fd), 0, 0)
	switch {
	case err != nil, !held:
		return unlocked, false
	case start < queueBase:
		return lockedByHolder, start >= slotBase
	}
	return lockedByWaiter, false
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
//
// It is read without a system call: the runtime's monotonic clock (the
// reading time.Now carries) is CLOCK_MONOTONIC itself, read through the
// vDSO, so one clock_gettime system call at the first use anchors it and
// every later ticket is that anchor plus the monotonic time since. A
// hand-off cycle asked for two tickets (the waiter's arrival, the owner's
// yield check), two system calls of about sixty. The anchor is off by at
// most half the time between the two runtime readings around the system
// call (a few microseconds): tickets order arrivals and time yields of
// milliseconds, and prove nothing.
func ticketNow() int64 {
	a := monoAnchor()
	if !a.ok {
		return 0
	}
	return a.ns + int64(time.Since(a.at))
}

type anchor struct {
	ns int64     // CLOCK_MONOTONIC at at
	at time.Time // with its monotonic reading
	ok bool
}

var monoAnchor = sync.OnceValue(func() anchor {
	before := time.Now()
	ns, err := sys.MonotonicNs()
	after := time.Now()
	if err != nil {
		return anchor{}
	}
	half := after.Sub(before) / 2
	return anchor{ns: ns, at: before.Add(half), ok: true}
})
