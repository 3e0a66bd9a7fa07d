//go:build !unix

package statelock

// chownForDir does nothing here: there are no uids to give objects to.
func (l *locker) chownForDir(fd int) error { return nil }
