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
// as is "..". Files are opened with O_NOFOLLOW|O_NONBLOCK (an exclusive
// create, which can only make a new file, without O_NONBLOCK) and their type is
// proved from the descriptor, so a FIFO, socket or device planted at a path
// is refused without blocking. Failures are *[Error] values with one of the
// outcome codes shared with the TypeScript peers (not_found,
// identity_mismatch, ...), matched with errors.Is against the Err*
// sentinels; a mutation whose result cannot be proved is never reported as
// success or as "nothing happened", and residue it could not prove safe to
// delete is listed in Error.Residue under names [StagingTarget] and
// [PlaceholderPrefix] recognize.
//
// # System symlinks
//
// Operating systems put symlinks of their own on the paths people use for
// state and lock files: Debian and Ubuntu make /var/lock and /var/run
// symlinks to /run/lock and /run, and macOS makes /tmp, /var and /etc
// symlinks into /private, so even [os.TempDir] is under one there. A path
// a caller gives to this package (the path of [OpenDir], [Mkdir],
// [WriteFile] and the other path-taking functions, and so the directory of
// a statelock state file or of a store) may start with one of these names
// ([SystemSymlinks]); [SystemPath] rewrites it to the same path under the
// symlink's target before it is opened, but only when
//
//   - the symlink is owned by root;
//   - every directory above it, and every directory above its target, is
//     a real directory owned by root and writable by neither group nor
//     others;
//   - the target is a real directory owned by root (it may be writable by
//     others, as /run/lock and /private/tmp are).
//
// Then only root can change where the name leads, and root can change
// anything anyway; no other user can redirect such a path. This is the
// rule of [os.OpenRoot] for its own path, made safe: the path that opens
// the directory may pass through a trusted system link, the names beneath
// an opened [Dir] never pass through any symlink, and a relative path is
// never rewritten. Only the start of a path is rewritten, so a symlink
// further along it is refused as any other. Where there is no root (Windows),
// nothing is trusted.
//
// Every other symlink in a path is refused (reparse_point), and nothing is
// touched. The message names the symlink and its target, says whether it is
// a system link that failed the rule, and gives the path under the target,
// which the caller can use if they trust where it leads; it never advises
// removing the symlink. A directory that is opened stays bound to the inode
// it was opened on: rewriting happens before the open, never after.
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
//   - Windows: every operation fails closed with "unsupported" unless the
//     program runs with EXACTFS_WINDOWS=unverified (exactly), which accepts
//     what is verified under Wine only (README, "Windows"). Even then
//     UnlinkExact uses the no-replace detach with its put-back, and
//     ReplaceExpected is atomic_unavailable (Windows has no exchange).
package exactfs
