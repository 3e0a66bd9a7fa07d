//go:build !linux

package liveness

// nestedOwner: no pid namespaces here, so no process has a pid of another
// namespace.
func nestedOwner(int, string) (bool, error) { return false, nil }
