//go:build unix && !linux

package exactfs

import "io/fs"

// umask returns the mask the process started with (startUmask): outside
// Linux the mask can only be read by setting it, which would race with
// the file creations of other goroutines. A program that changes its
// umask after start and wants WriteFile to follow passes ExactPerm with
// the mode it computed.
func umask() fs.FileMode { return startUmask }
