//go:build !linux

package statelock

// mkdirClaim makes the claim directory F.lock.transition, mode 0700.
func (l *locker) mkdirClaim() error { return l.dir.Mkdir(l.claim, 0o700) }
