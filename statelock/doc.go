// Package statelock is a lock for a shared state file F, and Update (lock,
// read, transform, durable replace, release) built on it. The lock is an
// on-disk protocol of small files beside F, the one the TypeScript peers of
// exactfs use, byte for byte: Go and TypeScript processes exclude each other
// on one state file, reuse each other's released records and reclaim each
// other's dead ones.
//
// # On disk
//
// F.lock is the owner record of the holder (compact JSON, no trailing
// newline, mode 0600); after release it is rewritten in place to a released
// tombstone and kept, and the next holder reuses its inode. Every pathname
// change of F.lock happens under the transition claim: the empty directory
// F.lock.transition (0700) with its owner record beside it in
// F.lock.transition.owner. The caller's operation never runs inside the
// claim, only the pathname bookkeeping does.
//
// On Linux the claim directory is recycled: it is given back by a rename
// (without replace) to the private name
// .gjc-delete-state-lock-spare-F.lock.transition and taken by the rename
// back, because freeing a directory's block can cost more than the rest of
// a lock cycle (claim_linux.go). Peers see what mkdir and rmdir show them.
// That spare is the one extra name a lock leaves: an empty 0700 directory
// that anyone may remove at any time (the next claim is then made with
// mkdir).
//
// # Trust: whose files the lock rests on
//
// Exclusion rests on the inodes the lock writes into and the directories
// it takes, and whoever owns such an inode can rename it over the lock's
// name again whenever it likes (a sticky directory such as /tmp lets an
// owner do exactly that). So a record, sidecar or spare claim directory
// is written into, rewritten in place or reused only when it is
// trusted: owned by our effective uid or by the owner of the lock's
// directory (who can rename or unlink anything in it anyway), with one
// link, and with the protocol's mode (0600 files, 0700 directories).
// Anything else is replaced under the claim (exact unlink of the version
// judged, then our own create) where the directory lets us; where it
// does not (another user's file in a sticky directory, a file we may not
// read), the lock is refused with lock_object_untrusted, an error naming
// the file, its owner (uid and user name) and who can clear it. A live
// holder of another uid is still contention: the rule is about adopting
// files, not about who may hold the lock. The residue sweeps never remove
// another user's file either. The rule lives in trust.go and is enforced
// where the rewrite and the reuse are (rewrite.go, reuse.go,
// claim_linux.go's spare, the crashed claim's sidecar).
//
// Root in a directory owned by another uid (a service's state directory)
// gives every object it creates there (records, sidecar, claim
// directory, and so its spare) to the directory's owner and group with
// fchown on the creating descriptor, before a byte is written; and it
// adopts the directory owner's records (trusted, above). So root's one-off
// lock leaves the service nothing it cannot read, judge or reuse, and a
// SIGKILLed root holder leaves a record the service reclaims by its
// kernel lock as usual. (The state file itself is Update's write, whose
// ownership is its own rule.)
//
// Every record is read with a cap (exactfs.RecordCap, 4 KiB; records are
// under 1 KiB): a larger one is malformed at once, after one fstat,
// without reading a byte of it, and kept for a person to check.
//
// # Beyond the reference
//
// An exactfs holder also holds an OFD lock (F_OFD_SETLK) on the inode of
// every record it writes, taken before the bytes are written and kept until
// the record is released. Its records carry pidfd_ino, pid_ns and boot_id
// after the reference's keys. A contender that finds such a record from
// this host and boot asks the kernel (F_OFD_GETLK through the descriptor it
// read the bytes from): no lock means the holder's descriptor is gone, so
// the holder is dead at once, whatever its pid now names. Records of
// TypeScript peers carry no such lock and are judged by the pid rules. On a
// filesystem that takes no OFD locks our records omit those fields, so that
// no contender ever reads a missing lock as a dead holder. On macOS, which
// has no OFD locks, records carry boot_id alone (kern.bootsessionuuid): it
// claims no kernel lock (Record.Kernel) and serves the pid rules, under
// which a record from an earlier boot is dead; the power-loss rule there
// takes the boot's start from kern.boottime, with a minute of slack for
// clock steps.
//
// Kernel slots (SPEC §4.8.1). Where the kernel gives every process a
// pidfd inode of its own (pidfs, Linux 6.9 and later; liveness reports 0
// for the one anonymous inode older kernels share between all pidfds), an
// F.lock record also carries "ofd_slot": N after boot_id, N that inode,
// which no other process of the boot ever has. Its holder's kernel lock is
// then a shared lock on the one byte 2^39+N of the record's inode instead
// of the whole holder range [0, 2^40), and a judge of the record asks
// about that byte only: a lock anyone else holds on the inode (a taker
// proving a tombstone) says nothing about this holder. The byte lies
// inside the holder range on purpose: an older exactfs judge, which asks
// about the whole range, reads a slot holder as alive (the safe side), and
// an older holder's exclusive whole-range lock and a slot lock exclude each
// other; an older build and this one share a lock safely
// (TestOlderBuildBeside runs the build of f315da3 beside this one). Claim
// sidecars keep the whole-range lock.
//
// A holder in a pid namespace other than the host's initial one (the
// inode of /proc/self/ns/pid is not PROC_PID_INIT_INO; a toolbox-style
// container sharing the directory) records a pid that names another
// process, or none, outside it. Its F.lock records name the host in
// pidns_host_id instead of owner_host_id: the reference reads a record
// without owner_host_id as alive whatever its pid, so it never steals such
// a holder's lock, and waits (or needs exactfs) when that holder dies;
// exactfs contenders judge it by its kernel lock as any other (same host,
// same boot: one kernel, one lock table), and by its boot id after a
// reboot. Its claim sidecars and tombstones keep owner_host_id (the
// reference never judges a sidecar).
//
// A record that does not parse (empty or torn: a TypeScript peer killed
// between truncating and writing it in place, or between creating and
// writing it) is reclaimed once no process on this host has it open for
// writing (the kernel's read-lease probe) and it is old enough: a second
// when it was written after it was born (birth time from statx), 30 s when
// it was created and never written, or where no birth time is known (its
// creator may still be inside open(O_CREAT)). Every
// writer holds a writable descriptor on a record while it is incomplete
// (judge.go). The reference protocol keeps such a record until explicit
// recovery.
//
// A claim's taker that holds its kernel lock on the sidecar leaves the
// sidecar the tombstone it found (SPEC §4.8.4): the lock attests the claim
// to every exactfs reclaimer, which asks it before the bytes, and the
// reference never reads the sidecar of a claim it does not hold. Our
// record is written into the sidecar only where no tombstone is there to
// keep (its first take, a crashed taker's record) or the filesystem takes
// no OFD locks; then its tombstone is fsynced before the claim directory
// goes. So no power cut leaves "no claim directory, sidecar not a
// tombstone", the state on which every reference call fails.
//
// A crashed transition claim is reclaimed when its sidecar proves the
// taker gone; the TypeScript reference strands it forever. New records are
// published whole (staged, locked, written, renamed without replace), so a
// kill never leaves an empty record of ours that no rule may reclaim.
//
// Between two Go holders the lock is handed over directly (SPEC §4.8.2,
// handoff.go): a Go waiter that finds a live Go owner (a record with
// "ofd_slot" whose slot lock the kernel shows held) takes its own slot
// lock on F.lock's inode and publishes the exact record it wants there in
// a seat of the mailbox, the private file
// .gjc-delete-state-lock-mailbox-F.lock beside the lock (internal/wake: 64
// seats, mapped shared, each waiter's seat held by an OFD lock, a state
// word changed only by compare-and-swap, a shared futex to sleep on). The
// owner's release serves the oldest seated waiter without the transition
// claim: it moves the seat to GRANTING, checks the waiter's slot lock on
// its inode, writes the waiter's bytes over its own with one pwrite
// (padded with spaces, no truncate), checks that F.lock still names the
// inode (looking again while a peer's exact unlink has it detached), and
// wakes the waiter, which enters once it reads exactly its bytes through
// its own descriptor. F.lock goes from one live record to the next and
// never holds a tombstone in between, so no reference process ever finds
// one to take; a granter or a waiter killed at any step leaves a record
// whose slot lock says at once whether its owner lives. With no Go waiter
// seated the release is the reference one, and the oldest seated waiter,
// if any, is woken to attempt at once. The mailbox is used only when it
// is our uid's, 0600, one link, of its fixed size, on a filesystem that
// answers the lease probe (local); otherwise, and where there are no OFD
// locks or no kernel slot, waiters wait the reference way below.
//
// Waiters behind anyone else (a TypeScript holder, an older exactfs, a
// busy claim) sleep with backoff and wake early on an inotify event of the
// F.lock inode; they, and new callers, look at the kernel lock before
// taking the claim, so a crowd of waiters does not starve the holder's
// release of the claim it needs; and they queue by arrival (wake.Queue) with
// sync.Mutex's two modes: a process that releases and asks again may
// overtake waiters for up to its Barge (50 ms), after which the queue is
// served in arrival order, so no waiter waits much longer than that plus
// one hold per waiter ahead of it.
//
// A release parks its descriptors of F.lock and of the sidecar instead of
// closing them, and the next lock or claim of this process writes through
// them (park.go): no open or close per cycle, and a process that releases
// and locks again wakes no waiter (the first waiter is woken by the close
// of the holder's written descriptor). Parked descriptors hold no lock and
// are closed after a second unused; F.lock's is closed at once when a
// waiter has waited longer than that Barge, and after 0.5 ms when waiters
// younger than that are queued, except after Update's early release by a
// process whose directory fsyncs take longer than those 0.5 ms: it will not
// be back sooner, so the first waiter is woken at once. A release that
// hands off closes its descriptor (F.lock is the waiter's record now).
//
// # Outcomes
//
// Lock, TryLock, Update, With and Unlock return only these, whatever live
// processes (Go or TypeScript) do meanwhile and whoever is SIGKILLed:
//   - success;
//   - ErrLocked (a *LockError: acquire_timeout, transition_claim_timeout,
//     lock_owner_live_or_unverifiable, lock_owner_record_fresh,
//     lock_owner_record_unprovenanced, legacy_directory_owner_unprovenanced)
//     naming the holder, or what is in the way, with its age;
//   - the context's error (inside a LockError with a timeout reason);
//   - unsafe_lock_path_type: a symlink, FIFO, socket or device where a
//     lock file or directory belongs, refused and left alone;
//   - an error the filesystem raised for this call (ENOSPC, EROFS, EIO,
//     EACCES, a failed fsync ...), with the path: lock_initialization_failed
//     when creating what the protocol needs failed, lock_inspection_failed
//     when reading or removing what is there failed, lock_release_failed
//     when our record could not be rewritten; and Update's read, fn and
//     write errors;
//   - lock_release_failed when someone else replaced our owner record
//     while we held it (left alone, reported loudly).
//
// A *LockError is an *exactfs.Error (the one error type of exactfs and the
// packages on it), whose Code is the reason above and the outcome:
// exactfs.CodeOf(err) and errors.Is(err, exactfs.Sentinel(reason)) report
// it, and a code of its cause never answers errors.Is (a
// lock_initialization_failed caused by a missing directory is not
// fs.ErrNotExist); errors.As reaches the cause: a *WaitError (who holds
// the lock, how many attempts over how long) wrapping the failure's own.
//
// A change made by another process between two of our steps is contention,
// never an error: a record or sidecar rewritten while we read it
// (changed_during_read), a record that vanished or was replaced after its
// verdict, a quarantine or detach name taken (quarantine_collision), a tree
// that changed before its removal, another reclaimer at the same crashed
// claim (it holds the claim's reclaim guard, a flock on the directory), a
// peer's F.lock.transition.removing. The attempt looks again within the
// wait budget (TryLock: one retry-worthy ErrLocked). A removal that a
// reclaimer killed after its detach left at F.lock.transition.removing (or
// F.lock.removing) is replayed to completion by the next process that
// takes the claim after making it anew, or that reclaims a crashed claim
// (replaying the removal completes it), never a reason to fail; one that
// is not what such a removal leaves (not empty, a symlink) is kept and
// named in the timeout error.
//
// # Crash residue of the state file
//
// A writer killed during Update's durable write leaves its staged file
// .F.<uuid>.replacement; a TypeScript peer leaves F.tmp-<pid>-<uuid>. The
// next holder sweeps them, under the lock, when it reclaimed the lock from
// a dead holder or holds this lock for the first time in its process: each
// is removed by exact unlink only if it is a single-link regular file, not
// F, open in no process on this host (the kernel's write-lease probe,
// exactfs.ProbeUnopened), and for a temp file, its pid gone. Everything else is
// kept; Held.Residue and Inspect say what was found, removed and kept, and
// why (residue.go).
//
// # Durability: which fsyncs the protocol needs
//
// The state file is durable: Update replaces it with a staged file that is
// fsynced, renamed over F, and the directory fsynced (two fsyncs), so after
// a power cut F holds the old bytes or the new ones.
//
// The lock files are not fsynced (but for the one sidecar tombstone above,
// which is for the reference's sake). A lock record only means something
// while its writer lives, and no writer outlives a power cut, so the only
// question is whether what a crash leaves behind can be told apart from a
// live holder. It can:
//   - a record of ours that reverts to an older live record, or survives
//     without its tombstone, carries boot_id: a record from an earlier boot
//     is dead;
//   - a record that lost its bytes (empty or torn: created, never flushed)
//     is malformed, and a malformed record last modified before the current
//     boot cannot belong to a live process (the power-loss rule);
//     it is reclaimed by exact unlink;
//   - a claim directory made before the current boot has no live taker and
//     is reclaimed (exact tree removal), whatever its sidecar says;
//   - a record the crash left as a tombstone is free anyway.
//
// TypeScript peers keep fsyncing their own records (six fsyncs per cycle in
// the reference), which costs them, not us. A record written by a
// TypeScript peer before a power cut and restored by journal replay is
// judged by its pid and start time after the reboot, like any other.
//
// Without these fsyncs an uncontended Update costs the two fsyncs of the
// durable write and cheap system calls for the lock. BenchmarkUpdateRatio
// and BenchmarkContendedRatio measure that against flock(2) with the plain
// durable write; the bench module (bench/) against gofrs/flock and
// flock(2) with several processes.
//
// # What a cycle costs
//
// File system calls per increment of one process on tmpfs, 2000
// increments, the Go runtime's own calls (futex, nanosleep, epoll, signals,
// mmap) left out:
//
//	cd bench && go build -o /tmp/bench . && mkdir -p /dev/shm/b/d &&
//	echo go | EXACTFS_BENCH_WORKER=1 strace -f -c -o /tmp/st.txt \
//	    /tmp/bench update /dev/shm/b/d/state.json /dev/shm/b/cfg 2000 1
//
//	                                      per increment  fsync
//	gofrs/flock + the same durable write       34          2
//	Update (this version)                      77          2
//	Update at f315da3                          87          2
//	Lock + the same durable write + Unlock     87          3
//	the same at f315da3                        96          2
//
// (bench's -strace kind, tmpfs, P=1, without the runtime's nanosleep, run
// beside the build of 84fcc7c: Update 78.6 against 77.8, Lock + write
// 91.8 against 90.8, gofrs/flock 39.0 against 40.2: §4.2's padding saves
// the release's ftruncate, and the release now looks for the mailbox, one
// lstat. An uncontended cycle is what it was; what the hand-off changes
// is the contended one, below.)
//
// Sticky ownership (below) changes the uncontended cycle of a process that
// updates in a loop: bench's -strace kind, P=1, without nanosleep, beside
// the build of eb953eb in one run: on tmpfs Update 30.2 against 78.4
// (gofrs/flock 38.8); on the disk 57.6 against 79.9, because under strace
// a cycle's release-to-relock often outlasts the 2 ms and about half the
// cycles still take the claims. A kept cycle is: the directory's open
// (openat2, fstat, geteuid), the proof and the fresh token (lstat,
// pwrite, fstat, pread), the close of the last cycle's directory, the
// state file's read and durable write (as below), the release's looks
// for the mailbox, the claim directory and the sidecar (three lstat), and
// the directory's fsync after the early release.
//
// gofrs/flock's 34 are 16 fcntl calls of Go's os package (4 per
// os.OpenFile), 4 openat, 4 close, 2 flock, 2 fsync, read, write, rename
// and stats. An Update's 77, with the spare claim directory and the parked
// descriptors of the previous cycle:
//   - open the directory, once per call, so that every step works on the
//     same directory even if its path is renamed: openat2, fstat, and
//     geteuid for the trust rule (3);
//   - look at the kernel lock first, so that a caller never takes the claim
//     while the lock is held: lstat, F_OFD_GETLK (2);
//   - take the transition claim from the spare: open it, fstat
//     and two getdents (it must be our empty 0700 directory), futimens (a
//     claim's age is its mtime), the no-replace rename (one taker), an
//     lstat that the claim is the directory checked (7);
//   - the claim's sidecar through the parked descriptor: lstat (the name
//     still names it), F_OFD_SETLK, fstat and pread (it is a tombstone,
//     and stays one: the kernel lock attests the claim), the fstat of the
//     trust rule (5);
//   - F.lock, the same way, its tombstone rewritten to our record (pwrite)
//     and proved (fstat, lstat): the record is at the name, whole (8);
//   - give the claim back: an lstat that the claim is still ours, lseek
//     and two getdents (still empty), the rename to the spare name, close,
//     the sidecar's OFD unlock (7);
//   - read the state file (exactfs Capture: lstat, open, fstat, pread,
//     fstat, close) and write it (lstat, create the staged file, fstat,
//     write, fsync, rename) (12);
//   - the release looks for the Go cohort's mailbox (lstat): a seated
//     waiter is served by the direct hand-off below instead (1);
//   - release under a second claim (7 + 6 + 7 as above), proving F.lock is
//     still ours (fstat, pread, lstat) before its tombstone (one pwrite
//     padded with spaces to the file's size, SPEC §4.2, lstat), the OFD
//     unlock of F.lock and one F_OFD_GETLK for the queue (parkRecord)
//     (about 30);
//   - after the early release: lstat, the directory's fsync, two closes (4).
//
// Lock pays one more fsync than Update: the directory's, the readers'
// rule (Early release, below). Each call costs 1-2 µs on the virtual
// machine this was measured on, so the lock is about 150 µs of CPU per
// cycle; against a durable write on a disk (milliseconds) that is noise,
// on tmpfs it is most of the cycle.
//
// A contended cycle between Go processes is the direct hand-off (above,
// handoff.go) instead of a reference release and a reference acquire: the
// releasing owner finds the oldest seated waiter in the mapped mailbox
// (no system call), checks its slot lock (F_OFD_GETLK), writes its record
// (pwrite), checks the name (lstat), drops its slot (F_OFD_SETLK) and
// wakes it (futex); the waiter, woken and seeing its seat GRANTED, reads
// F.lock once (fstat and pread: GRANTED is stored after the pwrite
// returned) and checks the name (lstat). Seating costs the waiter its
// slot and seat locks, one read and judgment of the holder, and one
// query of the holder's slot after it is seated; its seat descriptor is
// kept from one wait to the next (wake.Seat.Leave), its ticket read
// without a system call, and its ring wakes only an owner asleep on the
// bell. About 10 calls where the reference release and the next acquire
// cost about 50, and no claim
// directory, no sidecar: each step is there for the argument of
// protocol-perf §4.1b (the slot check so that no record is ever in
// F.lock unattested; one pwrite so that F.lock never holds a tombstone;
// the name checks so that a record detached by a peer is never taken for
// the lock).
//
// A process that locks again within 2 ms of its release keeps the lock
// in between (sticky ownership, SPEC §4.8.3, sticky.go): its next release
// keeps its record and slot lock in F.lock for at most 2 ms, unless a Go
// waiter is seated (handed over at once: a seating waiter rings the
// mailbox's bell) or a claim directory says a reference contender polls
// (released the reference way, and Go takers yield the tombstone to it).
// Its next Lock proves with one lstat that F.lock still names its inode
// unchanged (size, mtime, ctime, one link) and writes a fresh token into
// it with one pwrite, read back (Token stays unique per acquisition): no
// claim, no sidecar, no tombstone. A process that locks once never keeps
// anything. One that exits or is killed while it keeps the lock leaves the
// record of a dead process, reclaimed at once by Go (its slot is free) and
// by TypeScript (its pid is gone) — once its parent has reaped it: a
// zombie's pid is alive to the reference's pid check. Inspect in that
// 2 ms shows the process as the holder.
//
// # Early release
//
// Update releases the lock right after its rename and fsyncs the directory
// after that, before it returns (WithEarlyRelease(false) keeps the lock
// through the fsync): the next holder's read, work and staged fsync
// overlap this holder's directory fsync, which on a journaling filesystem
// is a journal commit, the longest step of a cycle. What a crash leaves, by
// the step this Update (A) had reached:
//   - before the rename: F holds the old bytes; A has not returned. A
//     staged file may be left under its private name.
//   - after the rename, before the release is done: F holds the old bytes
//     or A's, whole (they were fsynced before they got the name); A has not
//     returned, so nobody was told "done". A killed holder's lock is
//     reclaimed at once, as always.
//   - after the release, before A's directory fsync returns: later holders
//     may have read A's bytes and renamed their own over them. A power cut
//     leaves F at some state of the chain old, A, B, ... up to the newest
//     rename that reached the disk, each whole, and each built by a holder
//     that read the one before under the lock. Nobody whose fsync had not
//     returned was told "done"; a holder whose fsync had returned is
//     covered by the next case.
//   - after A's directory fsync returned nil: that fsync made the directory
//     durable as it was at some moment after A's rename, and at every such
//     moment F named A's file or the file of a later holder who read F
//     after that rename, with bytes fsynced before they got the name. So
//     after any crash F holds A's update, or what a later holder made of
//     it; A returns nil only then.
//
// The one property this needs is that fsync of a directory makes durable
// its entries as they are when it is called, whoever made them: the
// ordinary rename-then-fsync-the-directory durability. fsync is a call on
// an inode, not on the caller's history, and ext4 (with or without a
// journal), xfs, btrfs and APFS (F_FULLFSYNC) give it; on tmpfs nothing
// survives a power cut either way. Holding the lock through the fsync
// would add nothing: the next holder would make the same calls, later.
// (TestEarlyReleaseNextHolderCarriesBytes cuts the power at the new crash
// point, on ext4 and xfs; TestEarlyReleaseAcknowledgedSurvivePowerCut cuts
// it under four writers.)
//
// Readers (SPEC §4.6): a holder that returns without writing must not act
// on bytes a power cut can still erase, and after an early release the
// last rename may not be durable yet. So Lock and TryLock (and With) fsync
// the directory before they hand the lock to their caller (nothing is
// left to flush when the previous holder's own fsync has returned), and
// an Update whose function fails, or that fails before its rename, does it
// before it returns (TestReadersRuleDurable cuts the power right after
// such a reader returned, on ext4 and xfs).
//
// If A's directory fsync fails after the release, A cannot tell whether
// its rename will survive, and later holders may already have built on it:
// Update returns an error that satisfies errors.Is(err, ErrOutcomeUnknown)
// and wraps the fsync's durability_failed. Read F again to learn what it
// holds. A writer that ignores the lock, or replaces F without fsyncing its
// bytes, can undo a durable update with or without early release.
//
// # Group commit
//
// Concurrent Updates of one state file in one process share one lock
// cycle (SPEC §4.6): the first caller takes the lock while the others
// queue; once it holds the lock, every queued caller joins its batch; the
// file is read once, the functions run in arrival order, each in its own
// caller's goroutine and given the output of the previous one that
// succeeded, and one durable write carries the last output. Peers see one
// ordinary lock cycle. What each caller is told:
//   - its function's error (or ErrEmptyResult), to it alone; the next
//     function is given what the one before it was given;
//   - its function's panic (or runtime.Goexit), in its own goroutine, with
//     its own stack, after the lock is released; the others go on, and if
//     the panicking caller was the one holding the lock, it first finishes
//     the batch for them (the write, the release, their answers);
//   - nil once the write that carries its output is durable, or that
//     write's error, ErrOutcomeUnknown included, to every caller whose
//     output it carries (and to a caller that returned ErrNoChange after
//     an earlier change in the batch: it looked at bytes that write makes
//     durable);
//   - a caller whose context ends, or whose wait budget runs out, before
//     its function was given the state returns the lock wait's timeout
//     error (ErrLocked, acquire_timeout, wrapping the context's error);
//     its function never runs. Once its function ran, it waits for, and
//     is told, the outcome.
//
// The caller that takes the lock does so with its own context and budget,
// as a lone Update would; when that fails, it alone is told, and the next
// queued caller takes the lock with its own. Callers share a cycle only
// when their state file has the same absolute, cleaned path and their
// options are equal (the wait budget and WithAllowEmpty aside); two
// spellings that clean to different paths (a bind mount) never share a
// cycle and exclude each other through the lock as two processes do. An
// Update that makes one attempt (WithWait of zero or less) never queues.
// WithGroupCommit(false) gives every Update a lock cycle of its own. The
// mechanism is internal/combine.
//
// # Guards
//
// The library refuses what the CLI refuses, by default: a state file whose
// directory is missing (ErrNoDirectory; WithMakeDir(true) makes it,
// owner-only, the CLI's --mkdir), and an Update whose function returns no
// bytes (ErrEmptyResult; WithAllowEmpty(true) writes the empty file, the
// CLI's --allow-empty). A function that finds nothing to change returns
// ErrNoChange: nothing is written and Update returns nil.
//
// # Not guaranteed
//
// The claim rules that use time (a claim younger than one second is never
// judged; a tombstone sidecar one second old means its holder died before
// the rmdir) assume a live taker is not stopped for a second between two
// adjacent system calls — the same assumption the reference makes. Exact
// removal needs a filesystem with exchange or no-replace rename; where
// there is none, stale records are refused, never guessed away, and are left
// for Recover. Records on a volume shared between machines are judged alive
// unless they name this host.
package statelock
