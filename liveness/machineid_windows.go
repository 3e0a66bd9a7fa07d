package liveness

import (
	"fmt"

	"golang.org/x/sys/windows/registry"
)

// MachineID returns the MachineGuid of this Windows installation,
// lower-cased, from HKLM\SOFTWARE\Microsoft\Cryptography (the value the
// TypeScript peers read with `reg query`).
func MachineID() (string, error) {
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, `SOFTWARE\Microsoft\Cryptography`, registry.QUERY_VALUE|registry.WOW64_64KEY)
	if err != nil {
		return "", fmt.Errorf("liveness: reading MachineGuid: %w", err)
	}
	defer k.Close()
	v, _, err := k.GetStringValue("MachineGuid")
	if err != nil {
		return "", fmt.Errorf("liveness: reading MachineGuid: %w", err)
	}
	id, err := normalizeMachineID(v)
	if err != nil || len(id) != 36 {
		return "", fmt.Errorf("liveness: MachineGuid is malformed (%d bytes)", len(v))
	}
	return id, nil
}
