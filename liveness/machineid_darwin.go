package liveness

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
)

var platformUUIDPattern = regexp.MustCompile(`"IOPlatformUUID"\s*=\s*"([^"]+)"`)

// MachineID returns the IOPlatformUUID of this Mac, lower-cased, as printed
// by `ioreg -rd1 -c IOPlatformExpertDevice` (the source the TypeScript peers
// read, so both derive the same host id).
func MachineID() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "/usr/sbin/ioreg", "-rd1", "-c", "IOPlatformExpertDevice").Output()
	if err != nil {
		return "", fmt.Errorf("liveness: reading IOPlatformUUID: %w", err)
	}
	return parsePlatformUUID(out)
}

func parsePlatformUUID(out []byte) (string, error) {
	m := platformUUIDPattern.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("liveness: ioreg printed no IOPlatformUUID")
	}
	id, err := normalizeMachineID(string(m[1]))
	if err != nil || len(id) != 36 {
		return "", fmt.Errorf("liveness: IOPlatformUUID %q is malformed", m[1])
	}
	return id, nil
}
