//go:build !linux || exactfs_portable

package statelock

// Here claims are made with mkdir and removed with rmdir; claim_linux.go
// recycles them.

// makeClaim makes the claim directory; root in another uid's directory
// then gives it to the directory's owner (chownForDir) through a
// descriptor, as claim_linux.go does. The claim is released with rmdir,
// so nothing root-owned outlives it either way.
func (l *locker) makeClaim() error {
	c, err := l.dir.CreateDir(l.claim, 0o700)
	if err != nil {
		return err
	}
	l.chownForDir(c.Chown)
	c.Close()
	// Every claim here is made anew, so each take finishes a removal that
	// a reclaimer killed after its detach left at claim+".removing", as
	// claim_linux.go does for a claim it had to mkdir: without this the
	// detached directory stayed until the next crashed claim.
	l.replayDue = true
	return nil
}

func (l *locker) dropClaim() error { return l.dir.Rmdir(l.claim) }
func (l *locker) closeClaim()      {}
