//go:build !exactfs_portable

package sys

// Portable reports whether this binary was built with the exactfs_portable
// tag. That build compiles, on Linux, the fallbacks of platforms without
// inotify, OFD locks, the lease probe and pidfds (macOS, the BSDs) in place
// of the Linux implementations, so that CI runs every fallback path on
// every change. Tests that assert what only those Linux features give skip
// in it, saying so.
const Portable = false
