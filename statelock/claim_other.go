//go:build !linux

package statelock

// Here claims are made with mkdir and removed with rmdir; claim_linux.go
// recycles them.

func (l *locker) makeClaim() error { return l.dir.Mkdir(l.claim, 0o700) }
func (l *locker) dropClaim() error { return l.dir.Rmdir(l.claim) }
func (l *locker) closeClaim()      {}
