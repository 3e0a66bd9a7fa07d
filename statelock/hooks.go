package statelock

import "sync/atomic"

// Hook points (package internal/hook) at the race windows of the protocol.
// Tests set them to swap, plant or kill exactly there; production code
// only pays an atomic load per point.
const (
	// After lstat decided F.lock is a regular file, before it is opened.
	HookAfterTypeDecision = "statelock.after-type-decision"
	// After a stale verdict on F.lock, before the re-capture that must match it.
	HookAfterStaleInspection = "statelock.after-stale-inspection"
	// After the re-capture matched, immediately before the exact unlink.
	HookBeforeStaleRemoval = "statelock.before-stale-removal"
	// Inside a new owner record's write: created and locked, bytes not written.
	HookOwnerRecordWrite = "statelock.owner-record-write"
	// A fault point only (faultAt): failing it makes new records be created
	// in place, as on a filesystem without no-replace rename.
	HookCreateInPlace = "statelock.create-in-place"
	// The claim directory was just taken (made, or a spare renamed onto the
	// name); its sidecar is not written yet.
	HookClaimTaken = "statelock.claim-taken"
	// After the stale verdict on a transition claim, before its re-capture.
	HookAfterClaimInspection = "statelock.after-claim-inspection"
	// Immediately before the exact removal of a stale claim directory.
	HookBeforeClaimRemoval = "statelock.before-claim-removal"
	// After the stale verdict on a legacy F.lock/ directory, before the second capture.
	HookAfterLegacyVerdict = "statelock.after-legacy-verdict"
	// Immediately before the exact removal of a legacy directory.
	HookBeforeLegacyRemoval = "statelock.before-legacy-removal"
	// In Unlock, under the claim, before the held record is re-captured.
	HookBeforeRelease = "statelock.before-release"
	// In an in-place rewrite, after the new (padded) bytes were written and
	// before the file is cut to their length.
	HookRewriteBeforeTruncate = "statelock.rewrite-before-truncate"
	// In Unlock, after the held record was proved ours, before its rewrite.
	HookAfterOwnerValidation = "statelock.after-owner-validation"
)

// faultAt, when set by a test, makes the step named by a hook point fail
// with the returned error, as an I/O fault would. It exists because
// internal/hook cannot fail a step, and the write-failure cleanup is only
// reachable through a failed write.
var faultAt atomic.Pointer[func(point, path string) error]

func fault(point, path string) error {
	if f := faultAt.Load(); f != nil {
		return (*f)(point, path)
	}
	return nil
}
