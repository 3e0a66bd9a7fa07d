//go:build !linux

package sys

// BirthTime: no birth time is read on this platform (ok is false); callers
// take the rule that needs none.
func BirthTime(fd int) (ns int64, ok bool, err error) { return 0, false, nil }
