package statelock

import "sync/atomic"

// faultAt, when set by a test, makes the step named by a hook point
// (package internal/hook, e.g. hook.LockOwnerRecordWrite) fail with the
// returned error, as an I/O fault would. It exists because internal/hook
// cannot fail a step, and the write-failure cleanup is only reachable
// through a failed write.
var faultAt atomic.Pointer[func(point, path string) error]

func fault(point, path string) error {
	if f := faultAt.Load(); f != nil {
		return (*f)(point, path)
	}
	return nil
}
