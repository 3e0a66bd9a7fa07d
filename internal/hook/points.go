package hook

// The hook points of the module root (package exactfs). Their names are
// the module's business, not its users': they live here, where only the
// module's own code and tests can name them.
const (
	// Staged fires when the staged file is written and fsynced, just
	// before it is renamed, linked or exchanged into place.
	Staged = "exactfs.write.staged"
	// Committing fires after a write's last proof that its private staging
	// name still holds the file it staged, immediately before the rename,
	// link or exchange that commits it (WriteFile, Publish,
	// ReplaceExpected, Dir.CreateWith): the window a rename by name leaves
	// open. A file renamed over the staging name here is committed, and
	// the write must then report an unknown outcome, never success.
	Committing = "exactfs.write.committing"
	// ReplaceChecked fires in ReplaceExpected after the destination was
	// proved to be the expected predecessor and before the exchange.
	ReplaceChecked = "exactfs.replace.checked"
	// Committed fires once the new file is at the name (renamed, linked or
	// exchanged in, and the predecessor retired), after the AfterCommit
	// callback and before the directory fsync: a successor planted here must not turn the commit into an
	// error.
	Committed = "exactfs.write.committed"
	// ForceLinkFallback, when set, makes Publish behave as if the
	// filesystem lacked rename flags (tests of the link fallback).
	ForceLinkFallback = "exactfs.publish.force-link"
	// StageCreated fires when the staging file was just created, before
	// a byte is written to it: a test kills the writer here to leave an
	// empty staging file.
	StageCreated = "exactfs.write.stage-created"
	// BeforeCleanup fires after a write committed and before it removes
	// what the commit left under a private name (the staging link of the
	// link fallback, the predecessor ReplaceExpected exchanged out).
	BeforeCleanup = "exactfs.write.before-cleanup"

	// LockVisibleHidden, when set, makes LockVisible's second open answer
	// "no lock held", as on a volume that keeps byte-range locks per
	// handle, without caching the answer: tests of the callers that must
	// then not claim their lock in a record.
	LockVisibleHidden = "exactfs.lockvisible.hidden"
	// LockVisibleAsked fires each time LockVisible opens the file once
	// more and asks (not when it answers from its per-volume cache).
	LockVisibleAsked = "exactfs.lockvisible.asked"

	// UnlinkChecked fires after the object at the name was proved to be
	// the expected one and before it is detached: a successor planted here
	// must survive.
	UnlinkChecked = "exactfs.unlink.checked"
	// UnlinkDetached fires after the object was detached to the
	// quarantine name and before it is verified and deleted.
	UnlinkDetached = "exactfs.unlink.detached"
	// UnlinkDeleted fires, on the exchange path, after the detached object
	// was deleted and before the placeholder is taken off the name.
	UnlinkDeleted = "exactfs.unlink.deleted"
	// ForceNoExchange, when set, makes UnlinkExact behave as if the
	// filesystem had no exchange rename (tests of the no-replace path).
	ForceNoExchange = "exactfs.unlink.force-no-exchange"

	// MoveDirChecked fires in Dir.MoveEmptyDir after the directory was
	// opened and proved (empty, accepted by the caller's rule, its times
	// set) and before its no-replace rename: an object swapped in here is
	// what the rename moves, and it must be put back where it was.
	MoveDirChecked = "exactfs.movedir.checked"
	// MoveDirMoved fires in Dir.MoveEmptyDir after the rename and before
	// the look that proves what moved: a name planted at the source here
	// makes the put-back of a swapped object fail (restore_failed).
	MoveDirMoved = "exactfs.movedir.moved"

	// TreeDetached fires in RemoveTreeExact after the tree was renamed to
	// <dir>.removing and the parent fsynced, before anything inside is
	// removed: a test kills the process here to prove the removal replays.
	TreeDetached = "exactfs.tree.detached"
	// TreeCaptured fires in RemoveTreeExact after the tree at the name
	// was captured and found equal to the snapshot, before it is detached:
	// a successor that takes the name here must survive.
	TreeCaptured = "exactfs.tree.captured"
	// TreeEntryChecked fires after an entry of a detached tree was proved
	// to be the snapshot's and before it is removed: a successor planted at
	// its name here must survive.
	TreeEntryChecked = "exactfs.tree.entry-checked"
	// TreeEmptied fires when every entry of a detached tree is removed,
	// before the detached root itself is: a directory planted at
	// <dir>.removing here must survive.
	TreeEmptied = "exactfs.tree.emptied"

	// CaptureRead fires in Capture after the first fstat and before the
	// bytes are read: a test rewrites the file there to prove that a
	// change during the read is detected.
	CaptureRead = "exactfs.capture.read"

	// ForceWalk, when set, skips the one-call openat2 walk, so that tests
	// on Linux also cover the component walk that macOS and old kernels
	// use.
	ForceWalk = "exactfs.path.force-walk"
)

// The hook points of package store.
const (
	// StoreBeforeCommit fires in every store mutation right before the
	// last checks (binding, fence) that precede its commit; for writes,
	// that is when the new bytes are staged and fsynced under their
	// private name.
	StoreBeforeCommit = "store.mutation.before-commit"
	// StoreAfterCommit fires in every store mutation right after the
	// primitive committed, before the checks that follow it.
	StoreAfterCommit = "store.mutation.after-commit"
	// LeaseHeartbeat fires in a lease's heartbeat goroutine before it
	// checks and renews the record.
	LeaseHeartbeat = "store.lease.heartbeat"
	// LeaseCreated fires after a lease's lock file was created and its
	// record written, before the fence counter is updated.
	LeaseCreated = "store.lease.created"
)

// The hook points of package liveness.
const (
	// SecretRootChecked fires once the config root holding the
	// installation secret was checked (owner-only enough, a directory),
	// before the secret is read or created in it.
	SecretRootChecked = "liveness.secret.root-checked"
)

// The hook points of package statelock, at the race windows of its
// protocol. Tests set them to swap, plant or kill exactly there.
const (
	// LockAfterTypeDecision fires after lstat decided F.lock is a regular
	// file, before it is opened.
	LockAfterTypeDecision = "statelock.after-type-decision"
	// LockAfterStaleInspection fires after a stale verdict on F.lock,
	// before the re-capture that must match it.
	LockAfterStaleInspection = "statelock.after-stale-inspection"
	// LockBeforeStaleRemoval fires after the re-capture matched,
	// immediately before the exact unlink.
	LockBeforeStaleRemoval = "statelock.before-stale-removal"
	// LockOwnerRecordWrite fires inside a new owner record's write: the
	// file is created and locked, its bytes are not written yet.
	LockOwnerRecordWrite = "statelock.owner-record-write"
	// LockCreateInPlace is a fault point only (statelock's faultAt):
	// failing it makes new records be created in place, as on a
	// filesystem without no-replace rename.
	LockCreateInPlace = "statelock.create-in-place"
	// LockClaimTaken fires when the claim directory was just taken (made,
	// or a spare renamed onto the name), before its sidecar is written.
	LockClaimTaken = "statelock.claim-taken"
	// LockRecordGrowSync fires when a write at offset 0 has just made a
	// record file (F.lock, the claim sidecar, a staged record) longer, and
	// before its fsync: the one window in which a power cut can leave the
	// old bytes followed by zero bytes. Never in the steady state, where
	// records keep the size of the longest one written.
	LockRecordGrowSync = "statelock.record-grow-sync"
	// LockClaimSidecarSync fires at a claim's release when our record was
	// written into the sidecar (not the steady state, where the sidecar
	// stays a tombstone): its tombstone is written and not yet fsynced,
	// the claim directory is still there.
	LockClaimSidecarSync = "statelock.claim-sidecar-sync"
	// LockClaimDirSync fires (and is a fault point) when our record is
	// about to be written into the sidecar: the claim directory was just
	// made and the directory holding it is fsynced before any byte of the
	// record goes into the sidecar (SPEC §4.3, the take side).
	LockClaimDirSync = "statelock.claim-dir-sync"
	// LockYieldLook fires when an attempt has looked whether this process's
	// mapped mailbox asks Go takers to yield, after the registry's lock is
	// let go (the window in which an idle mailbox may be unmapped).
	LockYieldLook = "statelock.yield-look"
	// LockAfterClaimInspection fires after the stale verdict on a
	// transition claim, before its re-capture.
	LockAfterClaimInspection = "statelock.after-claim-inspection"
	// LockBeforeClaimRemoval fires immediately before the exact removal
	// of a stale claim directory.
	LockBeforeClaimRemoval = "statelock.before-claim-removal"
	// LockAfterLegacyVerdict fires after the stale verdict on a legacy
	// F.lock/ directory, before the second capture.
	LockAfterLegacyVerdict = "statelock.after-legacy-verdict"
	// LockBeforeLegacyRemoval fires immediately before the exact removal
	// of a legacy directory.
	LockBeforeLegacyRemoval = "statelock.before-legacy-removal"
	// LockBeforeRelease fires in Unlock, under the claim, before the held
	// record is re-captured.
	LockBeforeRelease = "statelock.before-release"
	// LockRewriteBeforeTruncate fires in an in-place rewrite, after the
	// new (padded) bytes were written and before the file is cut to their
	// length.
	LockRewriteBeforeTruncate = "statelock.rewrite-before-truncate"
	// LockAfterOwnerValidation fires in Unlock, after the held record was
	// proved ours, before its rewrite.
	LockAfterOwnerValidation = "statelock.after-owner-validation"
	// LockDirMissing fires when a lock call found the state file's
	// directory missing, before it makes it.
	LockDirMissing = "statelock.dir-missing"
	// LockWaitDeadline fires when a waiter's sleep reaches its deadline,
	// before the waiter looks once more for an event that came with it.
	LockWaitDeadline = "statelock.wait-deadline"
	// LockWaitTimedOut fires after LockWaitDeadline when that last look
	// found no event: the sleep ran out, nothing woke the waiter.
	LockWaitTimedOut = "statelock.wait-timed-out"
	// LockWaitUnchanged fires when an event woke a waiter but F.lock and
	// the queue are exactly as they were before its last attempt, so it
	// sleeps on (a spurious wake).
	LockWaitUnchanged = "statelock.wait-unchanged"
	// LockAttempt fires before every attempt of an acquisition (a look, a
	// peek or a full attempt under the claim).
	LockAttempt = "statelock.attempt"
	// LockHandoffSeated fires when a Go waiter has published its record
	// in the mailbox, holds its slot lock on F.lock's inode and is WAITING
	// for a direct hand-off (SPEC §4.8.2).
	LockHandoffSeated = "statelock.handoff-seated"
	// LockHandoffCheck fires in a release's direct hand-off after the CAS
	// of the waiter's seat to GRANTING, before the check of its slot lock.
	LockHandoffCheck = "statelock.handoff-check"
	// LockHandoffBeforePwrite fires after the waiter's slot lock was found
	// held, before the pwrite of its bytes over ours.
	LockHandoffBeforePwrite = "statelock.handoff-before-pwrite"
	// LockHandoffAfterPwrite fires after that pwrite, before the check
	// that F.lock still names the inode (§4.8.2d).
	LockHandoffAfterPwrite = "statelock.handoff-after-pwrite"
	// LockSlotUnlockRefused, when set, makes the granter's unlock of its
	// slot after a hand-off fail with the lock left in place (the kernel
	// refused it), so tests can prove that the descriptor is then closed,
	// not kept with our slot lock on it.
	LockSlotUnlockRefused = "statelock.slot-unlock-refused"
	// LockReadersRuleSync fires when the readers' rule fsyncs the
	// directory itself; LockReadersRulePromise when it relied on the
	// granter's promised fsync instead, and LockReadersRuleBroken when it
	// waited for a promise that was not kept in time (then it fsyncs).
	LockReadersRuleSync    = "statelock.readers-rule-sync"
	LockReadersRulePromise = "statelock.readers-rule-promise"
	LockReadersRuleBroken  = "statelock.readers-rule-broken"
	// LockPairWait fires when an early-released Update waits for its
	// grantee's rename before its directory fsync (statelock/pairsync.go).
	LockPairWait = "statelock.pair-wait"
	// LockHandoffNameLost fires each time that check finds F.lock naming
	// no inode or another one, before it looks again.
	LockHandoffNameLost = "statelock.handoff-name-lost"
	// LockSeatExitWatched fires when a seated waiter, woken with no grant,
	// has started watching for the exit of the holder it waits behind
	// (wake.WatchExit), before it sleeps again.
	LockSeatExitWatched = "statelock.seat-exit-watched"
	// LockSeatHolderExited fires when that holder has exited, before the
	// waiter is woken to look.
	LockSeatHolderExited = "statelock.seat-holder-exited"
	// LockHandoffAccepted fires in a waiter that has read exactly its
	// bytes through its descriptor, before it enters.
	LockHandoffAccepted = "statelock.handoff-accepted"
	// LockStickyKept fires when a release keeps F.lock for this process
	// (SPEC §4.8.3, sticky ownership), after it decided to.
	LockStickyKept = "statelock.sticky-kept"
	// LockStickyResumed fires when a Lock of this process takes back the
	// record it kept, after the proof and the fresh token's write.
	LockStickyResumed = "statelock.sticky-resumed"
	// LockStickyClaimSeen fires when a release that could keep F.lock finds
	// the claim directory, before its one attempt at the reference release.
	LockStickyClaimSeen = "statelock.sticky-claim-seen"
	// LockStickyLetGo fires when a kept record is let go (its idle time is
	// up, a waiter was seated, or a busy claim is tried again), before the
	// hand-off or the reference release.
	LockStickyLetGo = "statelock.sticky-let-go"
	// LockStickyAwaitLetGo fires when a Lock of this process finds the
	// record it kept being let go, before it waits for that to end.
	LockStickyAwaitLetGo = "statelock.sticky-await-let-go"
)

// The hook points of the etcd backend (nested module etcd/).
const (
	// EtcdCommitAnswerLost, when set, makes the etcd backend's commit treat
	// the answer of each commit transaction as lost after it was sent, so
	// tests can prove that a commit whose answer is lost is resolved, not
	// re-run.
	EtcdCommitAnswerLost = "etcd.commit-answer-lost"
)
