package sys

import (
	"fmt"
	"strings"
	"time"
)

// parseBoot checks and normalizes what macOS reports about the current
// boot (BootSession, boot_darwin.go): kern.bootsessionuuid, a UUID the
// kernel generates afresh at every boot, and kern.boottime, a timeval. It is
// portable so that it is tested on every platform. The UUID is returned in
// lower case, the form Linux's boot_id has, so that a record's boot id
// compares as text on both.
func parseBoot(uuid string, sec, usec int64) (string, time.Time, error) {
	id, err := parseBootID(uuid)
	if err != nil {
		return "", time.Time{}, err
	}
	if sec <= 0 || usec < 0 || usec >= 1e6 {
		return "", time.Time{}, fmt.Errorf("kern.boottime is {%d s, %d µs}, not a time after 1970", sec, usec)
	}
	return id, time.Unix(sec, usec*1e3), nil
}

// parseBootID is parseBoot's check of kern.bootsessionuuid alone
// (BootSessionID): the one form of the boot id every reader on macOS
// compares, records' boot_id (liveness) and lease records' (store) alike.
func parseBootID(uuid string) (string, error) {
	id := strings.ToLower(strings.TrimSpace(uuid))
	if !canonicalUUID(id) {
		return "", fmt.Errorf("kern.bootsessionuuid is %q, not a UUID (8-4-4-4-12 hexadecimal digits)", uuid)
	}
	if strings.Trim(id, "0-") == "" {
		return "", fmt.Errorf("kern.bootsessionuuid is the nil UUID: the kernel has not set it")
	}
	return id, nil
}

func canonicalUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}
