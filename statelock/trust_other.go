//go:build !unix

package statelock

// chownForDir does nothing here: there are no uids to give objects to.
func (l *locker) chownForDir(chown func(uid, gid int) error) error { return nil }
