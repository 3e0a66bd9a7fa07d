package sys

import (
	"strings"
	"testing"
	"time"
)

func TestParseBoot(t *testing.T) {
	id, start, err := parseBoot("5B2A1C3D-0E4F-4A6B-8C9D-0123456789AB\n", 1733270400, 250000)
	if err != nil || id != "5b2a1c3d-0e4f-4a6b-8c9d-0123456789ab" || !start.Equal(time.Unix(1733270400, 250_000_000)) {
		t.Fatalf("got %q %v %v", id, start, err)
	}
	bad := []struct {
		uuid      string
		sec, usec int64
		want      string
	}{
		{"", 1, 0, "not a UUID"},
		{"5b2a1c3d0e4f4a6b8c9d0123456789ab", 1, 0, "not a UUID"},
		{"5b2a1c3d-0e4f-4a6b-8c9d-0123456789ag", 1, 0, "not a UUID"},
		{"5b2a1c3d-0e4f-4a6b-8c9d_0123456789ab", 1, 0, "not a UUID"},
		{"00000000-0000-0000-0000-000000000000", 1, 0, "nil UUID"},
		{"5b2a1c3d-0e4f-4a6b-8c9d-0123456789ab", 0, 0, "kern.boottime"},
		{"5b2a1c3d-0e4f-4a6b-8c9d-0123456789ab", 1, 1e6, "kern.boottime"},
		{"5b2a1c3d-0e4f-4a6b-8c9d-0123456789ab", 1, -1, "kern.boottime"},
	}
	for _, c := range bad {
		if _, _, err := parseBoot(c.uuid, c.sec, c.usec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("parseBoot(%q, %d, %d) = %v, want an error about %q", c.uuid, c.sec, c.usec, err, c.want)
		}
		// The id alone (BootSessionID, liveness's boot_id) is held to the
		// same rule: before, liveness took any non-empty text, the nil
		// UUID included.
		_, err := parseBootID(c.uuid)
		if uuidBad := !strings.Contains(c.want, "kern.boottime"); uuidBad != (err != nil) {
			t.Errorf("parseBootID(%q) = %v", c.uuid, err)
		}
	}
	if id, err := parseBootID(" 5B2A1C3D-0E4F-4A6B-8C9D-0123456789AB\n"); err != nil || id != "5b2a1c3d-0e4f-4a6b-8c9d-0123456789ab" {
		t.Fatalf("parseBootID: %q, %v", id, err)
	}
}
