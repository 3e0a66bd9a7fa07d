//go:build !exactfs_portable

package statelock

// createFallback is createInPlace on Linux: the abandoned-write rule
// (the lease probe's proof that nobody writes it) reclaims a record a
// killed creator left empty (createRecord).
func (l *locker) createFallback(name string, rec *Record) (*heldRecord, error) {
	return l.createInPlace(name, rec)
}

// quarantineOrigin says where a record under a lock quarantine name comes
// from, for Recover: on Linux only an exact unlink that did not finish
// leaves one (records are staged under staging names, or created in place).
func quarantineOrigin([]byte) string {
	return "owner record detached by an interrupted exact unlink"
}
