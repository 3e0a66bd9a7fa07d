//go:build !windows

package liveness

// createTime is 0: only Windows records carry a creation time.
func createTime(int) (uint64, error) { return 0, nil }
