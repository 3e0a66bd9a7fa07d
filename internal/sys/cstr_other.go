//go:build unix && !(linux && (amd64 || arm64))

package sys

import "golang.org/x/sys/unix"

// fstatat and openat are x/sys's here (cstr_linux.go says why Linux on
// amd64 and arm64 has its own).
func fstatat(dirfd int, name string, st *unix.Stat_t, flags int) error {
	return unix.Fstatat(dirfd, name, st, flags)
}

func openat(dirfd int, name string, flags int, perm uint32) (int, error) {
	return unix.Openat(dirfd, name, flags, perm)
}
