// Package statelock is a lock on one shared state file F, and Update (lock,
// read, transform, durable replace, release) built on it.
//
// The lock excludes every process on this host that takes it through this
// package or through the TypeScript reference lock (SPEC §4): the two sides
// exclude each other, reuse each other's released records and reclaim each
// other's dead ones. It never expires: a holder loses it only once proved
// dead. It cannot stop a writer that ignores it.
//
// # On disk
//
//   - F.lock (0600): the holder's owner record, compact JSON without a
//     trailing newline, the reference's keys first. Release rewrites it in
//     place, to a released tombstone (pid 1, "released":true) or the next
//     Go owner's record, and never unlinks it: the next holder reuses it.
//   - F.lock.transition/ (empty, 0700): the transition claim, held around
//     every change of the name F.lock (never around the caller's work),
//     with its owner record in F.lock.transition.owner. On Linux a released
//     claim waits as .gjc-delete-state-lock-spare-F.lock.transition.
//   - .gjc-delete-state-lock-mailbox-F.lock (Linux, 32 KiB, 0600): the seats
//     of Go waiters (internal/wake). Delete it or the spare at will; never
//     truncate or rewrite the mailbox (waiters map it).
//   - A legacy F.lock/ directory, or F.lock.transition as a file: judged and
//     reclaimed, never made.
//
// The lock writes into or reuses only what it trusts: owned by our uid or
// the directory's owner, one link, the protocol's mode. Anything else is
// replaced under the claim, or refused (lock_object_untrusted, naming its
// owner) where the directory forbids that. Records are read with a 4 KiB
// cap. Root in another user's directory creates lock files as that user.
//
// # Beyond the reference
//
// Our records add boot_id, pid_ns, pidfd_ino and ofd_slot after the
// reference's keys, where the system has them (macOS: boot_id). The slot N
// is the writer's pidfd inode (pidfs kernels: no other process of the boot
// has it). From before its bytes are visible until release, the holder
// keeps a shared OFD lock on byte 2^39+N of the record's inode (without a
// slot, on the whole range [0, 2^40)); an older exactfs asks the whole range
// and so reads a slot holder as alive. A holder in a non-initial pid
// namespace writes pidns_host_id for owner_host_id in F.lock, so that the
// reference never judges it by a pid it cannot see.
//
// Between Go processes (SPEC §4.8): a Go waiter seats the exact record it
// wants in the mailbox, and the owner's release writes it over its own in
// one pwrite padded with spaces, without a claim (direct hand-off: F.lock
// never holds a tombstone between two Go owners); a process that has locked
// again within 2 ms of a release keeps its record up to 2 ms after each
// later release, unless a waiter or a reference contender shows up (sticky
// ownership; ReleaseKept ends it); a claim taker whose kernel lock on the
// sidecar is visible leaves the sidecar the tombstone it found.
//
// Against crashes: a claim whose taker is proved gone is reclaimed (the
// reference strands it); a torn record no process on this host has open for
// writing is reclaimed after 1 s (rewritten) or 30 s (created); killed
// writers' staged files of F are swept under the lock when open nowhere on
// this host (Held.Residue).
//
// # Outcomes
//
// Lock, TryLock, With, Update and Unlock end in one of these, whoever is
// killed meanwhile:
//   - success; for Update also when fn returned ErrNoChange (nothing written);
//   - ErrLocked: a *LockError whose reason is acquire_timeout,
//     transition_claim_timeout, lock_owner_live_or_unverifiable,
//     lock_owner_record_fresh, lock_owner_record_unprovenanced or
//     legacy_directory_owner_unprovenanced, naming the holder and its age
//     (an ended context arrives as a timeout wrapping ctx.Err());
//   - unsafe_lock_path_type (a symlink, FIFO, socket or device where a lock
//     file belongs; left alone) or lock_object_untrusted;
//   - this call's filesystem error, with its path: lock_initialization_failed,
//     lock_inspection_failed, lock_release_failed (also when someone replaced
//     our record while we held it; theirs is left alone); Update's read, fn
//     and write errors, ErrNoDirectory, ErrEmptyResult, ErrOutcomeUnknown.
//
// The reason is the *exactfs.Error's Code: errors.Is matches its sentinel,
// never a code of the cause; errors.As reaches the *WaitError and the cause.
// A change another process makes between two of our steps is contention,
// retried within the wait budget, never an error: a record rewritten while
// read (changed_during_read) or replaced after its verdict, a detach name
// taken (quarantine_collision), a second reclaimer at one crashed claim, a
// removal left at F.lock.transition.removing or F.lock.removing by a
// killed reclaimer (the next taker finishes it).
//
// # Liveness
//
// A record is taken over only when its writer is proved dead (package
// liveness): for ours from this host and boot, no kernel lock on its slot
// or range; else no such pid, a reused pid, a zombie, or an earlier boot. No
// host id (without WithHostLocal), another host, or unknown: alive. Only the
// inode and bytes judged are removed, captured again after the verdict.
//
// # Durability
//
// Update stages the new bytes, fsyncs them, renames them over F and fsyncs
// the directory: after any crash F holds the old bytes or the new. Lock
// files are not fsynced: nothing a power cut leaves passes for a live holder
// (our records name their boot; a torn record or a claim directory from an
// earlier boot is reclaimed). Only a sidecar our record went into (its first
// take, a crashed claim, no OFD locks) is fsynced as a tombstone before the
// claim directory goes, which is itself made durable first: the reference
// fails on any sidecar but a tombstone when it finds no claim directory.
//
// # Early release
//
// Update releases the lock right after its rename, then fsyncs the directory
// (WithEarlyRelease(false) holds it through that fsync). Crash by crash:
// before the rename, F holds the old bytes; after it, the old or ours,
// whole; after the release, some whole state of the chain old, ours, later
// holders' (each read its predecessor under the lock); no caller was told
// "done" in any of these. A directory fsync makes durable the names as they
// are when it runs, and from our rename on F names our file or a later one
// built on it: once Update returns nil, F durably holds our bytes or what
// was made of them. A failed fsync after the release is ErrOutcomeUnknown:
// read F again. Readers' rule: Lock, TryLock, With, and an Update that
// writes nothing, make sure the last rename is durable before they return,
// so no caller acts on a rename a power cut could undo. When the lock came
// to them from an Update that released early (handed over by a process of
// this version, or kept for their own process), they wait for that
// Update's directory fsync, which it promised; otherwise, or when that
// fsync fails or its Update dies first, they fsync the directory
// themselves. Where a directory fsync writes to a device (it took 100 µs
// or more), an Update that handed the lock over while others queue behind
// its grantee waits, at most 3 ms, until the grantee has renamed and
// granted in turn before it fsyncs, so that one write of the directory
// carries both renames; the grantee still makes its own fsync, which then
// has little left to write (pairsync.go).
//
// # Group commit
//
// Concurrent Updates of one F in one process (same absolute path, same
// options but the wait and WithAllowEmpty) share one lock cycle, read and
// durable write. Each fn runs in its caller's goroutine, in arrival order,
// on the output of the last that succeeded; an error or panic reaches its
// own caller only; a caller whose output the write carries returns once
// that write is durable, with its outcome; one whose context ends before
// its fn ran gets the wait's timeout, and its fn never runs.
// WithGroupCommit(false), or a wait of zero (one attempt), opts out.
//
// # Not guaranteed
//
//   - Shared or network filesystems: the lock relies on one host's atomic
//     exclusive create, mkdir and no-replace rename; another host's records
//     are never judged dead, and without exact removal a stale lock waits
//     for Recover.
//   - Clocks: a claim younger than 1 s is never judged (no live taker is
//     assumed to stop that long between two calls, as the reference
//     assumes); a wall clock stepped forward ages claims and torn records by
//     the step, up to "before this boot".
//   - Other users: every process of a lock runs as one uid (root in its
//     directory aside); a same-uid process can undo anything.
//   - A process that exits while it keeps the lock (sticky, no ReleaseKept)
//     holds off TypeScript peers until its parent reaps it.
//   - Waiters' order: advisory, among exactfs processes only.
//   - Windows: every call refuses and creates nothing. The Windows path
//     (create-new records, mkdir claims, the holder's LockFileEx on bytes
//     2^39 to 2^40 of F.lock with "kernel_lock" in its record, only on a
//     volume where another open sees that lock (exactfs.LockVisible;
//     elsewhere the record claims nothing and is judged by pid), sharing
//     violations as contention, a reclaim guard on the sidecar) is built
//     and tested under Wine behind the sys layer's switch, which programs
//     keep off until the rest of the port is proved.
//
// What a cycle costs, call by call, and why each call is there:
// bench/COSTS.md in the repository; how waiters sleep and wake: package
// internal/wake.
package statelock
