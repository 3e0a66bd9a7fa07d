package liveness

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// machineIDFiles are read in order; the second is where D-Bus keeps a copy
// on systems whose /etc/machine-id is missing.
var machineIDFiles = []string{"/etc/machine-id", "/var/lib/dbus/machine-id"}

// MachineID returns the raw machine id of this host, trimmed and
// lower-cased: /etc/machine-id, else /var/lib/dbus/machine-id. A file that is
// absent or malformed is skipped; any other read error is returned, because
// silently moving on to the next file could yield a different host id than a
// peer that could read the first one.
func MachineID() (string, error) {
	for _, file := range machineIDFiles {
		b, err := os.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("liveness: reading machine id: %w", err)
		}
		if id, err := normalizeMachineID(string(b)); err == nil && len(id) == 32 {
			return id, nil
		}
	}
	return "", fmt.Errorf("liveness: machine id is unavailable or malformed (%s, %s)", machineIDFiles[0], machineIDFiles[1])
}
