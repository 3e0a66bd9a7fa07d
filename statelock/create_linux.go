//go:build !exactfs_portable

package statelock

// createFallback is createInPlace on Linux: the abandoned-write rule
// (the lease probe's proof that nobody writes it) reclaims a record a
// killed creator left empty (createRecord).
func (l *locker) createFallback(name string, rec *Record) (*heldRecord, error) {
	return l.createInPlace(name, rec)
}
