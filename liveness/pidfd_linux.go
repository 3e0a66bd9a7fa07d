//go:build !exactfs_portable

package liveness

import (
	"os"

	"golang.org/x/sys/unix"
)

// pidfdBuilt: this build asks the kernel for pidfd inodes (the portable
// build, pidfd_other.go, does not).
const pidfdBuilt = true

// pidfdIno returns the inode of a pidfd for pid when pidfds live on pidfs.
//
// Since Linux 6.9 a pidfd is a file on pidfs whose inode number is assigned
// from a 64-bit counter when the struct pid is allocated, so it names one
// process for the life of the boot and is never reused, even when the pid
// number is (on 32-bit kernels the 64-bit id is split into inode and
// generation, and 2^32 processes would have to start before it wraps).
// Before 6.9 every pidfd is the same anonymous inode, which would make every
// process look identical; so the inode only counts when fstatfs says the
// descriptor is on pidfs, which is a property of the object itself, not a
// guess from the kernel version.
func pidfdIno(pid int) (uint64, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err == unix.ENOSYS {
		return 0, nil
	}
	if err != nil {
		return 0, os.NewSyscallError("pidfd_open", err)
	}
	defer unix.Close(fd)
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil {
		return 0, os.NewSyscallError("fstatfs", err)
	}
	if uint64(sfs.Type) != unix.PID_FS_MAGIC {
		return 0, nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, os.NewSyscallError("fstat", err)
	}
	return st.Ino, nil
}
