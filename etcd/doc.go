// Package etcd is the exactfs lock on an etcd cluster: the interface of
// package locker (Lock, TryLock, Unlock, Update, Inspect, Lost) for
// processes on several machines sharing one state value, with the fence
// enforced by the server.
//
// # Keys
//
// A lock is named by its state key K (the path of an etcd:// URL). Its
// queue lives under the prefix K + ".lock/": every contender puts one key
// there, bound to its session lease, whose value is the holder metadata
// (pid, host, since, and the liveness evidence of package liveness). The
// contender whose key has the smallest create revision holds the lock; the
// others each watch the key just ahead of theirs and look again when it is
// deleted. The create revision of the holder's key is its fencing token.
//
// # The fence
//
// Update reads K in the same transaction that queues or confirms the lock,
// calls fn once, and commits in one transaction that writes K and deletes the
// lock key only if the lock key still has our create revision and K still has
// the mod revision we read. A holder whose lease expired (it was paused,
// partitioned, or its keepalives stopped) has no lock key any more, so its
// commit writes nothing and Update returns an error matching locker.ErrLost.
// fn is never called again behind the caller's back.
//
// A commit whose answer is lost (the member died, the leader changed) is
// resolved, not retried blindly: while our lock key exists the commit did
// not apply and the identical transaction is sent again (its compares make a
// second application impossible); once the key is gone, the revision that
// deleted it tells whether our write applied (K was written in that very
// revision) or the lease expired first.
//
// # Cancellation, budgets and stepping down
//
// The session lease is shared by every lock call of a Client and outlives
// them, so a queue key left behind would block its lock for as long as the
// client lives. A call whose context ends while its key is being put lets
// that one attempt finish and deletes the key; keys whose deletion found no
// cluster are deleted by the client's next lock call. Each request's first
// attempt gets 1 s (or three times the slowest recent request), each retry
// twice the one before, within the step's budget (WithOpTimeout). Held.Lost
// closes TTL minus WithStepDownMargin after the send time of the last
// confirmed renewal, before the server can expire the lease; WithLockDelay
// makes a waiter whose predecessor lost its lease wait before returning.
//
// # Recovery and forced release
//
// Recover ends, with proof, what would block a lock until a lease runs out
// or forever: the lease of a holder this host proves dead, a key bound to
// no lease. ReleaseHolder ends a stuck holder that is not provably dead (a
// stopped or wedged process, one on another host), named by its fencing
// token: it revokes the holder's lease after a transaction confirms that
// the holder key is still the one judged, so a holder that released
// meanwhile, and its successor, are never touched; a holder that looks
// alive is released only when the caller says so. The successor then waits
// its lock-delay, as after any lost holder.
//
// # Unlike concurrency.Mutex
//
// Unlock deletes only our own key (a compare on its create revision), so a
// holder whose key expired and was taken over never deletes a successor's
// key; each acquisition has its own key even when one session holds several
// locks; and the key carries who holds it.
package etcd
