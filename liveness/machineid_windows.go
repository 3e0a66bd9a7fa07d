package liveness

import (
	"fmt"
	"strings"

	"golang.org/x/sys/windows/registry"
)

// MachineID returns the MachineGuid of this Windows installation,
// lower-cased, from HKLM\SOFTWARE\Microsoft\Cryptography (the value the
// TypeScript peers read with `reg query`), through the 64-bit view of the
// registry, which is what a 64-bit reg.exe reads.
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
	return machineGUID(v)
}

// machineGUID normalizes a MachineGuid value as the TypeScript peers do:
// lower-cased, and only in the dashed 36-character form (no braces, not
// the 32 bare digits), not all zeros. Its host id is the HMAC of exactly
// that text, so any other spelling would be another host.
func machineGUID(v string) (string, error) {
	const where = `liveness: MachineGuid in HKLM\SOFTWARE\Microsoft\Cryptography`
	id, err := normalizeMachineID(v)
	switch {
	case err == nil && len(id) == 36:
		return id, nil
	case strings.TrimSpace(v) != "" && strings.Trim(strings.TrimSpace(v), "0-") == "":
		return "", fmt.Errorf("%s is all zeros, which identifies no machine", where)
	}
	// The value is left out, as for the other machine ids: hiding it is
	// what the keyed host id is for.
	return "", fmt.Errorf("%s is malformed (%d bytes); want a GUID in the form 01234567-89ab-cdef-0123-456789abcdef", where, len(v))
}
