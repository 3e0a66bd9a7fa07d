package liveness

import (
	"context"
	"fmt"
	"os/exec"
)

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
