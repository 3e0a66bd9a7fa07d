package wake

import (
	"context"
	"errors"
	"syscall"
	"time"
)

// The platform-free half of the kqueue watch (watch_darwin.go): which
// events wake a waiter, what a failed kqueue falls back to, and when a wake
// is only a hint that changed nothing. It is compiled everywhere so that its
// tests run on Linux (there is no Mac in CI); the darwin file feeds it the
// kernel's events.

// kevent is the part of a kernel kevent the decision needs.
type kevent struct {
	Ident  uint64
	Filter int16
	Flags  uint16
	Fflags uint32
}

// XNU's numbers (sys/event.h), checked against x/sys/unix at compile time in
// watch_darwin.go.
const (
	kqFilterVnode = -4  // EVFILT_VNODE
	kqFilterUser  = -10 // EVFILT_USER
	kqEvError     = 0x4000
	kqEvEOF       = 0x8000

	kqNoteDelete = 0x1
	kqNoteWrite  = 0x2
	kqNoteExtend = 0x4
	kqNoteAttrib = 0x8
	kqNoteLink   = 0x10
	kqNoteRename = 0x20
	kqNoteRevoke = 0x40
)

// kqFileMask is what wakes a waiter about the inode F.lock names: its bytes
// (a release writes the tombstone in place, a take writes its record),
// its name (a reclaim renames or deletes it; NOTE_LINK and NOTE_ATTRIB for
// the link count and mode), and its filesystem going away (NOTE_REVOKE).
// There is no close event in kqueue, so unlike inotify's watch nothing
// tells "the holder closed it" from "a reader closed it"; there is no Go
// waiter queue here either (no OFD locks), so every waiter wakes on the
// change itself. kqDirMask: with no F.lock, any change of the directory's
// entries (the name may have appeared).
const (
	kqFileMask = kqNoteDelete | kqNoteWrite | kqNoteExtend | kqNoteAttrib | kqNoteLink | kqNoteRename | kqNoteRevoke
	kqDirMask  = kqNoteWrite | kqNoteLink | kqNoteRename | kqNoteDelete | kqNoteRevoke
)

// kqVerdict is what one batch of events means to a waiter.
type kqVerdict int

const (
	kqNothing kqVerdict = iota // none concerns F.lock: wait on
	kqLook                     // F.lock may have changed: compare what it shows
	kqCancel                   // the context's trigger (EVFILT_USER)
	kqBroken                   // the kernel refused a watch: sleep out the wait
)

// classify reads a batch of events: fileIdent and dirIdent are the
// descriptors registered for F.lock's inode and its directory (-1: none).
// An EV_ERROR entry means a registration failed, and nothing can be trusted
// to wake the waiter any more, so the rest of the wait is a plain sleep.
func classify(evs []kevent, fileIdent, dirIdent int) kqVerdict {
	v := kqNothing
	for _, e := range evs {
		switch {
		case e.Flags&kqEvError != 0:
			return kqBroken
		case e.Filter == kqFilterUser:
			v = max(v, kqCancel)
		case e.Filter != kqFilterVnode:
		case fileIdent >= 0 && e.Ident == uint64(fileIdent) && (e.Fflags&kqFileMask != 0 || e.Flags&kqEvEOF != 0):
			v = max(v, kqLook)
		case dirIdent >= 0 && e.Ident == uint64(dirIdent) && (e.Fflags&kqDirMask != 0 || e.Flags&kqEvEOF != 0):
			v = max(v, kqLook)
		}
	}
	return v
}

// nameState is what an lstat of F.lock shows, as far as a waiter cares:
// which inode it names and whether that inode was written or changed.
// Access times are left out: a reader's read may update them, and every
// waiter's attempt reads F.lock.
type nameState struct {
	absent       bool
	dev, ino     uint64
	nlink        uint64
	mode         uint32
	size         int64
	mtime, ctime int64 // ns
}

// kqLoop waits until deadline for an event that changed what F.lock shows
// (true), for ctx (its error), or for the deadline (false). poll waits at
// most its argument for events; look lstats F.lock, seen is what it showed
// when the watch was armed. A vnode event after which F.lock shows exactly
// seen (an atime, a chmod to the same mode, a neighbour's entry in the
// directory) is no reason to attempt: the waiter sleeps on to the same
// deadline, as inotify's waiters do (acquisition.wait's observation).
// EINTR polls again; any other error of poll, or a refused registration,
// means the kqueue is no longer a waker: the rest of the wait is a plain
// timed sleep, never a busy return.
func kqLoop(ctx context.Context, deadline time.Time, poll func(time.Duration) ([]kevent, error),
	fileIdent, dirIdent int, look func() nameState, seen nameState) (bool, error) {
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false, nil
		}
		evs, err := poll(left)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return false, Sleep(ctx, time.Until(deadline))
		}
		switch classify(evs, fileIdent, dirIdent) {
		case kqBroken:
			return false, Sleep(ctx, time.Until(deadline))
		case kqCancel:
			// A trigger left over from an earlier wait's context (EV_CLEAR
			// resets it once read) is not this wait's: go on.
			if err := ctx.Err(); err != nil {
				return false, err
			}
		case kqLook:
			if look() != seen {
				return true, nil
			}
		}
	}
}
