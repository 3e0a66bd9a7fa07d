// Package model is an executable model of the state-file lock protocol
// (SPEC §4, with the Go cohort of §4.8), checked exhaustively: every
// interleaving of a few processes, with a crash after any step and, where
// asked, write-back in any order and a power cut. It is a proof tool, not
// used by the library; its tests run in CI.
//
// # What is modelled
//
// The disk (State):
//   - F.lock: the name and the inode it names, each inode's content
//     (tombstone, the live record of one incarnation of one process, or
//     torn/empty) and a write version. A capture is (inode, version): the
//     reference's snapshot compares inode, size, mtime and SHA-256, and a
//     fresh token makes every write distinct, so any write changes it.
//   - F.lock.transition/ (present or not, with an identity, so that an
//     exact tree removal of a judged directory refuses a new one) and the
//     sidecar F.lock.transition.owner (one inode, rewritten in place).
//   - Kernel locks: each process's slot lock (§4.8.1: on which inode it
//     holds byte 2^39+N) and its OFD lock on the sidecar (§4.8.4). A crash
//     drops them; the crashed pid is dead for every judge.
//   - The mailbox: per process a slot state (idle, WAITING, GRANTING,
//     GRANTED) and the record bytes it published.
//   - With PowerCut: what is durable of the sidecar and of the claim
//     directory, written back by kernel steps in any order, fsync making it
//     immediate; the power cut kills everyone and keeps only that.
//
// The processes (steps.go; each program counter names one atomic step and
// the statelock or seed function it stands for):
//   - Cohort (a Go process with §4.8 on): look at F.lock; acquire under the
//     claim by create (published whole, slot lock first) or by rewriting
//     the tombstone in place; the claim is mkdir plus the kernel lock on
//     the sidecar, which stays a tombstone (§4.8.4); queue behind a live
//     cohort owner by publishing its bytes, taking its slot lock on the
//     inode it saw, and waiting; the owner's release: CAS a waiter to
//     GRANTING, check the waiter's slot lock on its inode (§4.8.2b), one
//     pwrite of the waiter's bytes (c), lstat (d), GRANTED; the waiter
//     enters when its descriptor shows exactly its bytes and the name
//     still names that inode, goes back to WAITING when its granter died
//     mid-grant, and withdraws when the holder is gone; sticky ownership
//     (§4.8.3: only with no waiter, no claim directory, and acquisitions
//     still to come); the reference release under the claim otherwise;
//     stale reclaim of F.lock (capture, judge by slot lock, exact unlink)
//     and of a crashed claim (judge, sidecar proved and rewritten to a
//     fsynced tombstone, exact tree removal).
//   - Ref (a Go process on the reference path, §4.8.5): the same claims,
//     but with its record written into the sidecar, so the sidecar is
//     made a tombstone and fsynced before the rmdir (§4.3), and the claim
//     directory is made durable (an fsync of the directory, a step of its
//     own after mkdir) before its record goes in (see below);
//     judged by pid; no hand-off, no sticky.
//   - Old (today's exactfs, before §4.8, on the same directory): the
//     reference path with §4.7's kernel locks: an OFD lock on its record's
//     inode (the whole holder range, so it answers for every slot byte)
//     and on the sidecar while it holds a claim; it judges a record with
//     locks by "any lock on the inode", so a cohort waiter's slot lock
//     reads as alive to it (§4.8.5: the safe side); its claim release
//     does not fsync the sidecar tombstone (claim.go releaseClaim).
//   - TS (seed 003 as it is): withLockPathTransition (mkdir; a directory in
//     the way is never reclaimed, T2), acquireOwnerLock on the sidecar and
//     on F.lock (exclusive create, visible empty until written; or prove a
//     tombstone through the descriptor, truncate, write, fsync, and
//     re-capture), releaseTransitionClaim, releaseOwnerLock (its re-capture
//     allows a live successor), and reclaimStaleSessionStateLock (lstat,
//     capture, judge by pid, re-capture, exact unlink). Its fatal cases are
//     states: T1 (a sidecar that is not a tombstone under a fresh claim),
//     T4 (an object changed during its rewrite), and a record or sidecar
//     changed before its release.
//
// # Properties
//
// Checked on every reachable state: never two owners (critical section or
// sticky) at once; never a tombstone in F.lock while a Go owner hands it
// to a waiter; no TypeScript process reaches a fatal case (with a single
// TypeScript process, anything that changes its objects is a Go step); no
// Go owner finds its record changed; after a power cut, never "no claim
// directory, sidecar a Go record" (T1 for every later TypeScript call).
// Then on the reachable graph: from every reachable state, some sequence
// of steps of the live processes (no further crash) lets every live Go
// process finish. Crashed processes are gone; TypeScript processes may
// still move (a Go waiter behind a TypeScript holder needs it to release).
// This is "can still finish", not fairness: a strand is a state from which
// the Go side can never finish, whatever the scheduler does. What the
// reference strands for itself (a claim a crashed process left, T2) is
// healed by the next Go process that takes the claim; the model checks
// that such a Go process is never stopped by it, not that one comes along
// (a Go process past its last claim does not return to heal it).
//
// A property that holds because a branch is never taken proves little:
// TestEveryStepReached and TestEveryOutcomeTaken require every step and
// every outcome of every step (each emit in steps.go) to be taken in the
// CI configurations, except the bad variants', the fatal cases, and two
// compares that only a writer outside the protocol could fail (the
// exact unlink of a record judged dead under the claim: dead records do
// not change, only a live owner hands off).
//
// Known-bad variants (Bug) must each be caught; TestBadVariantsCaught
// holds each to the property it breaks and to the steps of its mechanism,
// in a configuration the correct protocol passes, and prints the
// counterexample:
//   - BugNoSlotCheck (no §4.8.2b): the waiter's bytes land before its slot
//     lock, a Go judge finds the record dead and unlinks it while the
//     waiter enters: two owners.
//   - BugSlotReuse (§4.8.1 broken): a waiter dies while the owner grants
//     it; restarted, it takes its dead predecessor's slot number and
//     queues on the same inode; the owner's check sees that number held
//     and writes the predecessor's bytes, a dead record that every Go judge
//     now reads as alive (the new process holds its slot), and the new
//     process waits on itself forever: a strand.
//   - BugTombstoneHandoff: a tombstone in F.lock mid-hand-off, which a
//     TypeScript claim holder may prove and rewrite (T4).
//   - BugRmdirBeforeDurableTomb, BugRefTakeNoDirSync: a power cut leaves no
//     claim directory and a Go record in the sidecar (T1 for TypeScript).
//   - BugNoGrantRecovery: a waiter whose granter died mid-grant waits
//     forever: a strand.
//   - BugRefRmdirFirst: TypeScript takes the claim and meets a Go record in
//     the sidecar: T1, its operation fails.
//
// # Reading a trace
//
// A counterexample is the shortest path found (breadth first) from the
// steady state (for a strand, followed by one way it goes on, marked
// "(then)"): each step names the process (P<index>), the step it was
// about to take in brackets, what it did, then the whole state after it:
// F.lock (inode and content; detached inodes still open), the claim
// directory and who made it, the sidecar, durable copies under PowerCut,
// and per process "P<index>.<incarnation> <kind> <next step> done=<n>"
// with its kernel locks (slot N on inode i, sidecar lock), mailbox state
// and the record it holds. go test -run TestBadVariantsCaught -v prints
// them all.
//
// # What is abstracted away, and why that is sound
//
//   - Time. The age rules (a claim or sidecar tombstone younger than 1 s
//     is not judged; an empty record younger than 30 s is kept) exist only
//     to let a live process finish a few system calls. The model reads
//     them as "its taker is alive" (a ghost variable: who made the claim
//     directory) and the cohort's mkdir and sidecar lock as one step. This
//     assumes what the protocol assumes: a live taker never stalls for a
//     second inside its claim bookkeeping. Backoff, wake-ups, budgets and
//     timeouts are not modelled: waiting is the absence of a step, and a
//     timeout is a retry.
//   - Torn reads and the detach inside exact unlink. Each read (capture)
//     and each pwrite is one atomic step, and exact unlink is one
//     compare-and-delete. A capture that overlaps a write yields null,
//     malformed or a mix that the re-capture and the exact unlink's
//     compare reject (protocol-perf §4.1b point 3), so a torn read has the
//     effects of a read before or after the write, or of contention, all
//     of which the model covers. A transient detach that is put back is
//     invisible to a process that looks again (§4.8.2d says it must).
//     The reference's own non-atomic rewrite (truncate, write) is modelled
//     step by step: its torn state is visible and can be left by a crash.
//   - Steps merged where nothing of interest can fall between them. The
//     reference's re-capture and its exact unlink are one step (the
//     unlink compares the same identity again, so a change between them
//     is refused either way); its proof of a tombstone through the
//     rewrite descriptor and its truncate are one step (no protocol step
//     writes a tombstone or sidecar that a claim holder has proved: Go
//     writes tombstones only under the claim, the sidecar only under its
//     own claim); a judge whose snapshot has changed since its capture
//     keeps the record (its exact unlink would refuse: versions never
//     come back). A Go judge otherwise judges at the judge step, against
//     the kernel locks and pids of that moment.
//   - T1 is taken as fatal the first time a TypeScript process meets a
//     sidecar that is not a tombstone under a claim it just made. The seed
//     fails there outright on its reclaim path and retries on its acquire
//     path only while F.lock is absent; reporting it at once is the
//     stricter reading.
//   - Inode identity. Ids are reused only when no name, descriptor,
//     snapshot or lock refers to the old inode (the kernel cannot recycle
//     an inode a descriptor holds, and nothing else compares ids).
//     Versions are renumbered (canon): only equality between an object's
//     current version and the snapshots held of it is ever tested.
//   - The owner reads the waiter's bytes from the mailbox once, at the CAS,
//     and checks the slot named in those bytes: a mailbox position reused
//     by a new process between check and pwrite must not change what is
//     written.
//   - The queue order (tickets) and which waiter is served: any WAITING
//     waiter may be chosen, which includes FIFO.
//   - The first claim on a fresh directory: runs start in the steady state
//     (F.lock and sidecar tombstones, no claim directory). A crash between
//     the very first mkdir and the sidecar's creation leaves a claim
//     without a sidecar, which SPEC §4.3 keeps for explicit recovery.
//   - Legacy directory locks (§4.5), trust and ownership (§4.2), other
//     hosts, superseded claim files, Update's state-file write (§4.6), the
//     yield window for TypeScript: outside the lock's exclusion argument
//     or pure fairness.
//   - Power cut: only the claim directory and the sidecar are tracked;
//     F.lock after a reboot is dead for every judge (boot id, pids), so
//     its durable bytes decide nothing about exclusion.
//
// # Found by the model
//
// A Go taker on the reference path writes its record into the sidecar; if
// write-back keeps that record and loses the mkdir (no fsync of the
// directory after mkdir), a power cut leaves "no claim directory, sidecar
// a Go record", the T1 state §4.3 forbids (BugRefTakeNoDirSync). statelock
// now does what the model's Ref does (claimDurable, commit 84fcc7c): mkdir
// (or the spare's rename) is one step, the directory's fsync the next,
// and only then is a byte of the record written into the sidecar, on both
// paths that write it (reuseReleased over a tombstone it proved, takeRecord
// over anything else). A power cut or a crash can fall between mkdir and
// fsync; the sidecar is still a tombstone there, so nothing is lost. The
// steady state never gets there: its taker leaves the sidecar a tombstone
// (§4.8.4) and the cohort does not need the fsync. Old, an exactfs from
// before §4.8.4 and claimDurable, writes its record without the fsync and
// releases without fsyncing the tombstone (BugRmdirBeforeDurableTomb):
// TestTodaysClaimReleaseHole prints the power cut that leaves T1 behind
// (configurations with Old therefore run without power cuts).
//
// # Sizes
//
// TestProtocolHolds runs about 370 000 states in CI, in seconds;
// EXACTFS_MODEL_LARGE=1 adds configurations of 0.4 to 2.7 million states
// each (2 Go cohort + 1 TypeScript, 2 acquisitions each, a crash and a
// restart anywhere; 3 cohort + TypeScript; two crashes; today's exactfs
// beside the cohort and TypeScript): 7.3 million states, 25 s to 4 min
// on two cores depending on load, 1.7 GB of memory at the peak. The tests
// log the exact counts.
package model
