// Package locker is the lock interface that every exactfs lock backend
// satisfies: the state-file lock of package statelock (the default, one
// machine) and the etcd backend of module github.com/exactfs/exactfs/etcd
// (several machines, the fence enforced by the server).
//
// A program written against Locker runs unchanged on either backend:
//
//	var l locker.Locker = locker.File("state.json")
//	err := l.Update(ctx, func(old []byte) ([]byte, error) { ... })
//
// The contract every backend keeps:
//   - Lock and TryLock return a Lease, held until Unlock. A lease is held by
//     at most one holder at a time, and its Token (the fencing token) is
//     unique per acquisition and grows with each acquisition of the same lock
//     where the backend can order them (etcd: the lock key's create revision).
//   - Lost is closed when the backend learns that the lease was taken from
//     its holder (etcd: the session lease expired, or the lock key was
//     deleted by someone else). It is never closed by Unlock. Err then says
//     why (an error that matches ErrLost).
//   - Update calls fn at most once per call, never again behind the
//     caller's back. Its write happens only if the caller still holds the
//     lock at the moment of the write; otherwise nothing is written and the
//     error matches ErrLost.
//   - A lock that is busy fails with an error that matches ErrLocked.
package locker

import (
	"context"
	"errors"
	"time"

	"github.com/exactfs/exactfs/statelock"
)

// ErrLocked reports that someone else holds the lock: a TryLock that met a
// holder, or a Lock whose wait ran out. It is statelock.ErrLocked itself, so
// that code checking either one sees both backends' contention failures.
var ErrLocked = statelock.ErrLocked

// ErrLost reports that a holder's lease ended without its Unlock: it expired
// (the holder was paused or cut off from the server longer than its TTL) or
// was revoked. Whatever the holder meant to write under it was not written.
var ErrLost = errors.New("the lock was lost")

// Locker is one lock (of one state file or key) on one backend.
type Locker interface {
	// Lock acquires the lock, waiting as long as ctx and the backend's wait
	// budget allow.
	Lock(ctx context.Context) (Lease, error)
	// TryLock makes one attempt; a holder fails it with ErrLocked.
	TryLock(ctx context.Context) (Lease, error)
	// Update locks, reads the state (nil when there is none), calls fn once,
	// writes what fn returned if fn succeeded and the lock is still ours,
	// and unlocks. If fn fails, nothing is written and its error is
	// returned.
	Update(ctx context.Context, fn func(old []byte) ([]byte, error)) error
	// Inspect describes the lock without changing it.
	Inspect(ctx context.Context) (Status, error)
}

// Lease is one acquisition of a lock. Unlock it exactly once.
type Lease interface {
	// Token is the fencing token of this acquisition.
	Token() string
	// Lost is closed once the backend learns that the lease was taken from
	// this holder. It is not closed by Unlock.
	Lost() <-chan struct{}
	// Err is nil while the lease is held (or after a clean Unlock), and an
	// error matching ErrLost once Lost is closed.
	Err() error
	// Unlock releases the lease. It releases only this acquisition: if the
	// lease was already lost, it changes nothing and returns an error
	// matching ErrLost.
	Unlock() error
}

// Status is what Inspect found, in terms common to the backends.
type Status struct {
	Backend string // "file" or "etcd"
	Lock    string // the lock's name: F.lock, or the etcd key prefix
	// State is "free", "held", or a backend's own word for something else
	// (the file backend's statelock.LockState values: "released", "stale",
	// "unreadable", "legacy", "unsafe").
	State   string
	Holder  *Holder // nil when nobody holds the lock
	Waiters int     // queued waiters, where the backend can count them (-1: unknown)
	Detail  string  // for people
}

// Holder is who holds a lock.
type Holder struct {
	Pid   int64
	Host  string    // host name or host id; "" when the holder does not say
	Since time.Time // when the holder took the lock (zero when unknown)
	Token string    // the fencing token of the holder's acquisition
	// TTL is how long the holder's lease lasts without a keepalive (etcd);
	// 0 where the lock does not expire (the file lock lasts as long as its
	// holder lives).
	TTL     time.Duration
	Verdict string // "alive", "dead" or "unknown", where the backend judges
	Detail  string // one line for people
}
