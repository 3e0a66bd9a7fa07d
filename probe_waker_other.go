//go:build (!linux && !darwin) || exactfs_portable

package exactfs

// probeWaker: this build has no waker (no inotify, no kqueue: the BSDs,
// Windows, and Linux built with exactfs_portable), so a lock waiter sleeps
// on its timed backoff alone.
func probeWaker(int, func(string) error) (string, ProbeResult) {
	return "timed backoff", ProbeResult{false, "no inotify or kqueue waker in this build"}
}
