// Package liveness answers one question for the lock protocols of exactfs:
// is the process named by an owner record provably gone?
//
// A record names its owner by evidence: the pid, the process start
// time with the format it was read in, the boot it ran in, the host it ran
// on, and, in records exactfs writes, the inode of a pidfd for the process
// and the inode of its pid namespace (Linux) or the process creation time
// (Windows, where the start time is "unknown", as the reference writes it). [Self] collects that evidence for the
// calling process; [LoadHostIdentity] computes the host id that TypeScript
// peers compute from the same machine id and installation secret.
//
// [Judge.Judge] turns a record into a three-valued [Verdict]. Only [Dead]
// authorizes a reclaim, and it is said only when something proves it: the
// kernel has no such pid, the pid now names a different process, the process
// is a zombie, or the record was written during an earlier boot. Everything
// the package cannot prove (another host, another pid namespace, a probe the
// kernel refused to answer, a start time it cannot read) is [Alive] or
// [Unknown], and both mean "keep out".
//
// Two protocols share one way of acting on a verdict. [Reclaim] is the
// judge-then-remove step: it captures a record through one no-follow
// descriptor, lets the protocol's judge decide on exactly those bytes, and
// removes exactly that version (exact unlink), only on [Dead], after it
// captured the name again and found the same version there ([Removal]
// says how: the quarantine name, the windows for a protocol's race hooks,
// and whether the caller serializes reclaimers itself). The store lease
// and every record removal of the state lock (a dead owner's F.lock or
// sidecar, a superseded claim file, Recover's residue, the state file's
// staging residue) run on it. A holder
// that takes [HoldAttestation] on its record before writing it lets a
// contender in the same boot ask the kernel instead of the pid rules
// ([Attested]): no lock proves the holder's descriptor gone, however it
// died (SIGKILL included), with no pid-reuse ambiguity.
//
// What is not guaranteed: a record without a host id, or one written in a
// different pid or time namespace that did not record its pid namespace, is
// judged with this namespace's view of the pid; such records are exactly as
// trustworthy as their writer made them. A Dead verdict is a statement about
// the instant of the probe; callers must still remove only the very bytes
// they judged (exact unlink), because a successor can take the path at any
// moment.
package liveness
