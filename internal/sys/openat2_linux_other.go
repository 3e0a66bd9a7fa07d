//go:build linux && !(amd64 || arm64)

package sys

import "golang.org/x/sys/unix"

// openat2 is x/sys's here (cstr_linux.go says why Linux on amd64 and
// arm64 has its own).
func openat2(dirfd int, path string, how *unix.OpenHow) (int, error) {
	return unix.Openat2(dirfd, path, how)
}
