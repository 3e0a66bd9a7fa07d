//go:build linux || darwin

package exactfs

import (
	"syscall"

	"github.com/exactfs/exactfs/internal/sys"
)

func isNotSupported(en syscall.Errno) bool { return en == syscall.EOPNOTSUPP || en == syscall.ENOTSUP }

func errnoName(en syscall.Errno) string { return sys.ErrnoName(en) }
