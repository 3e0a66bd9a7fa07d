package statelock

import (
	"errors"
	"runtime"
	"syscall"
)

// transientBusy reports a refusal that Windows gives a name someone is
// using right now, which is contention to wait out, never a failure:
// the internal sys package maps ERROR_SHARING_VIOLATION (another handle's share mode
// excludes ours: a scanner, an indexer, a reader that opened without
// FILE_SHARE_DELETE) and STATUS_DELETE_PENDING (a name whose file or
// directory was deleted while a handle keeps it: legacy delete semantics,
// which the reference's libuv falls back to) to EBUSY. The reference reads
// the same situations as contention (its claim loop takes mkdir's EPERM,
// a delete-pending directory, for a busy claim). Elsewhere EBUSY means
// something else (a mount point) and is left an error.
func transientBusy(err error) bool {
	return runtime.GOOS == "windows" && errors.Is(err, syscall.EBUSY)
}

// busyHolder describes what keeps a name busy on Windows.
const busyHolder = "another process that has it open, or is deleting it (a Windows sharing violation or delete-pending name)"
