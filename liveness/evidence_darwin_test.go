package liveness

import (
	"os"
	"testing"
)

// A record written on macOS says "unknown" and names no format
// (startTimeWherePsOnly): Self and StartTime give exactly that, so no
// TypeScript build can read a live exactfs holder as another process.
func TestSelfCarriesNoStartTime(t *testing.T) {
	e, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	if e.StartTime != UnknownStartTime || e.StartTimeFormat != "" {
		t.Fatalf("Self: start time %q, format %q; want %q and none", e.StartTime, e.StartTimeFormat, UnknownStartTime)
	}
	if v, f, err := StartTime(os.Getpid()); err != nil || v != UnknownStartTime || f != "" {
		t.Fatalf("StartTime: %q, %q, %v", v, f, err)
	}
	// Records of earlier builds (FormatPsUTC) are still compared.
	if v, err := StartTimeAs(os.Getpid(), FormatPsUTC); err != nil || v == "" {
		t.Fatalf("StartTimeAs(%s): %q, %v", FormatPsUTC, v, err)
	}
}
