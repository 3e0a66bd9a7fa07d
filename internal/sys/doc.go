// Package sys is the thin layer of raw, per-platform system calls under
// exactfs: descriptor-relative opens that never follow a final symlink,
// fstat/fstatat, rename with and without flags, link, unlink, fsync.
//
// It holds no policy. Every function retries EINTR a bounded number of times
// and otherwise returns the errno unchanged, so that callers can classify it.
// On platforms where the calls cannot be made safe (Windows), every function
// returns ErrUnsupported and exactfs fails closed.
package sys

import (
	"errors"
	"runtime"
)

// ErrUnsupported is returned by every call on a platform where exactfs
// cannot make the operation safe.
var ErrUnsupported = errors.New("unsupported on " + runtime.GOOS + ": exactfs fails closed rather than risk another process's file")

// maxEINTR bounds the retries of a call interrupted by a signal. The Go
// runtime installs its handlers with SA_RESTART, so EINTR is rare; a bound
// keeps a pathological signal storm from spinning forever.
const maxEINTR = 100
