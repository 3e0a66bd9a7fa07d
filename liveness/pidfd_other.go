//go:build linux && exactfs_portable

package liveness

// pidfdIno is 0 in the portable build (the exactfs_portable tag), which
// compiles on Linux what a platform without pidfds has, so that CI runs the
// judge's fallbacks: a record then carries no pidfd_ino, and a judge decides
// by the boot id, kill(pid, 0), the zombie state and the start time alone,
// as it does on macOS.
// pidfdBuilt: this build never asks the kernel for pidfd inodes.
const pidfdBuilt = false

func pidfdIno(int) (uint64, error) { return 0, nil }
