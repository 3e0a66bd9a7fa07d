//go:build unix && !linux && !darwin

package exactfs

// Other Unix systems have ACLs this package cannot read; owner-only cannot
// be proved, so it fails closed.

func aclAttributes(ownerKind) []string { return []string{ACLAccess} }

func aclClear(op, path string, fd int, attr string) error {
	return aclErr(op, path, CodeACLUnavailable, ACLClear, attr, "ACLs cannot be inspected on this platform; refusing", nil)
}

func aclQuery(op, path string, fd int, attr string) error {
	return aclErr(op, path, CodeACLUnavailable, ACLQuery, attr, "ACLs cannot be inspected on this platform; refusing", nil)
}
