package exactfs

import (
	"bytes"
	"io/fs"
	"os"
	"strconv"
)

// umask returns the process's file mode creation mask as it is now, read
// from /proc/self/status (Linux 4.7 and later): reading it there changes
// nothing, where umask(2) can only be read by setting it. Without /proc,
// the mask the process started with (startUmask) stands in.
func umask() fs.FileMode {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return startUmask
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("Umask:")); ok {
			if m, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 8, 32); err == nil {
				return fs.FileMode(m) & fs.ModePerm
			}
		}
	}
	return startUmask
}
