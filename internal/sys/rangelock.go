package sys

// RangeLock is the kernel's answer to "who holds a lock on these bytes"
// (F_OFD_GETLK, OFDQuery): the one lock it names when several are held.
type RangeLock struct {
	Held       bool
	Shared     bool  // a read lock (F_RDLCK)
	Start, Len int64 // the lock's own range (Len 0: to the end and beyond)
	// Pid is -1 for an open-file-description lock, which belongs to no
	// process; the owner's pid for a classic POSIX (process) lock.
	Pid int
}
