// Package store is owner-only managed storage bound to one directory, with a
// lease lock that fences mutations and a reaper for crash residue.
//
// A [Store] is opened on a directory and bound to its device and inode.
// Every operation takes a path relative to that directory, resolved one
// component at a time without following symlinks; ".." and absolute paths
// are refused. Before and after each mutation the store proves that its path
// still names the directory it was bound to, and refuses with
// [ErrRootChanged] when it does not: a caller that reads the path afterwards
// must find what the store wrote, not a stranger's directory.
//
// Everything the store creates is owner-only (directories 0700, files 0600,
// no ACL: Linux's POSIX ACL attributes, macOS's extended ACL) and verified
// through a descriptor proved to be the object, never by pathname alone;
// see [ApplyOwnerOnly] and [VerifyOwnerOnly]. Other Unix systems have ACLs
// this package cannot read, and fail closed with acl_unavailable.
//
// A [Lease] is a lock file holding a JSON record with an
// expiry. It is kept alive by a heartbeat, checked by [Lease.AssertOwned],
// released by rewriting the record through the held descriptor (never by
// unlinking a name), and taken over by another process only when the record
// is released or expired and its owner provably gone. On Linux a holder
// also keeps a kernel lock (an OFD lock) on its record while it holds the
// lease, and says so in the record: a holder that died, SIGKILL included,
// is proved gone by the lock's absence and its lease is taken over at once
// rather than after its expiry (the reclaim engine is liveness.Reclaim,
// shared with the state lock's kernel check). Each acquisition
// carries a fencing token that strictly increases across the holders of one
// lease name. A store can take a lease as its mutation fence
// ([Store.AcquireFence]): from then on every mutation asserts ownership
// before and after it commits.
//
// Writes that commit by exchange (ReplaceExpected, RemoveExpected) and
// Replace hold a per-directory flock from their last check to the end of
// their commit, so store writers in several processes never have two
// exchange-and-verify sequences in flight in one directory (two of them can
// swap each other's files back). Staging and fsync stay outside the lock.
//
// [Store.Reap] removes crash residue that is provably ours and inert and
// reports what it kept and why.
//
// A Store is safe for concurrent use, Close included: its descriptors are
// reference-counted, so an operation racing Close either completes on the
// store's directory or fails as closed (errors.Is os.ErrClosed), never on
// a descriptor number the kernel has given to another file.
//
// What is not guaranteed: the fence is a check, not a storage-side
// barrier. Writes assert the lease once their bytes are staged, right before
// the rename or exchange that commits them; a lease lost in the few system
// calls between that check and the commit is reported after the commit (the
// mutation returns ErrLeaseLost with Committed set). Lease records carry
// no host id, so, as in the reference implementation, a lock directory is
// assumed to be used from one host: a record from another host has another
// boot id and counts as gone once its lease expires (the kernel lock is
// asked only about records of this boot).
//
// On Windows every operation fails closed in programs unless they run
// with EXACTFS_WINDOWS=unverified (exactly; README, "Windows"): the pieces
// are built and tested under Wine only, never on real Windows, where the
// owner-only DACLs they rely on are kept (Wine keeps none, so there every
// store refuses with acl_present or acl_verify_failed). The commit lock is
// LockFileEx on a private file inside the directory (exactfs.DirLockName),
// the attestation LockFileEx on bytes beyond the record, Windows records
// (no boot id) are judged by it, the fence counter is replaced under the
// held lease, and ReplaceExpected is atomic_unavailable (no exchange).
package store
