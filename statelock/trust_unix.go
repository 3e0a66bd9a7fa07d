//go:build unix

package statelock

// chownForDir gives an object the lock has just created (not yet visible
// with any bytes) to the owner and group of the lock's directory, when we
// are root and the directory is another uid's. chown is the Chown method
// of the object's open *os.File or exactfs.Dir: it changes the object we
// made, whatever its name names by then.
//
// Root taking a lock in a service's directory would otherwise leave
// root-owned 0600 records there, which the service can neither read nor
// (under the trust rule) adopt: the service would be locked out for good.
// Given to the directory's owner, they are objects the service trusts
// (its own), and root trusts them too (the directory owner's, trust.go);
// both keep sharing the lock, in either order, and a root holder killed
// with SIGKILL leaves a record the service can judge and replace.
// Elsewhere (not root, or root's own directory) this does nothing: the
// objects are ours.
func (l *locker) chownForDir(chown func(uid, gid int) error) error {
	if l.euid != 0 {
		return nil
	}
	d, err := l.dir.StatRaw()
	if err != nil {
		return err
	}
	if d.Uid == 0 {
		return nil
	}
	return chown(int(d.Uid), int(d.Gid))
}
