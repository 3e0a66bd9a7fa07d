// Package exactfs provides filesystem primitives whose every removal or
// replacement is bound to an identity proved on the object itself.
//
// An [Identity] is the inode, link count, size and modification time of a
// regular file from one fstat, plus the SHA-256 of the bytes read through
// the same descriptor ([Capture]). The mutating primitives take one and act
// only on that object:
//
//   - [UnlinkExact] is compare-and-delete: it detaches the file to a private
//     quarantine name (atomically exchanging in an empty placeholder where
//     the filesystem can), proves again what it detached, and deletes only
//     that; a successor that raced in is put back where it was.
//   - [ReplaceExpected] is compare-and-swap: the successor is staged,
//     fsynced and exchanged in, and the predecessor that comes out is proved
//     before it is removed. The name is never missing.
//   - [Publish] creates and never replaces; [WriteFile] replaces atomically
//     and durably; [PublishStaged] publishes a file the caller wrote itself.
//   - [CaptureTree] and [RemoveTreeExact] do the same for a directory tree,
//     with a replayable detach to <dir>.removing.
//
// Every path is resolved one component at a time from a directory
// descriptor (on Linux in one openat2 call with RESOLVE_NO_SYMLINKS), and a
// symlink in any component, the last included, is refused (reparse_point),
// as is "..". Files are opened with O_NOFOLLOW|O_NONBLOCK and their type is
// proved from the descriptor, so a FIFO, socket or device planted at a path
// is refused without blocking. Failures are *[Error] values with one of the
// outcome codes shared with the TypeScript peers (not_found,
// identity_mismatch, ...), matched with errors.Is against the Err*
// sentinels; a mutation whose result cannot be proved is never reported as
// success or as "nothing happened", and residue it could not prove safe to
// delete is listed in Error.Residue under names [StagingTarget] and
// [PlaceholderPrefix] recognize.
//
// What is not guaranteed:
//
//   - Protection from a process of the same user that sets out to defeat
//     the checks (it can write a file between our proof and its use through
//     an open descriptor, or restore an mtime); exactfs protects cooperating
//     processes and mistakes, not against a hostile same-uid adversary.
//   - Atomicity on filesystems without renameat2 flags (NFS, some FUSE
//     filesystems, CephFS setups): there Publish uses link(2), and
//     UnlinkExact, ReplaceExpected and RemoveTreeExact refuse with
//     atomic_unavailable rather than risk another process's file. Even a
//     plain rename through FUSE may not be atomic for concurrent readers.
//   - Concurrent exact unlinks or replaces of one name in several processes
//     take turns only as far as their exchanges nest; within one process
//     they are serialized. Callers that race many processes on one name
//     (lock reclaimers) serialize them, as the state-file lock's claim does.
//   - Paths through system symlinks: on macOS /var, /tmp and /etc are
//     symlinks into /private, so a path under them is refused; name the
//     /private path (filepath.EvalSymlinks of a prefix you trust).
//   - Windows: every operation fails closed with "unsupported on windows".
package exactfs
