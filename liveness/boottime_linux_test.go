package liveness

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBootTimeLinux: BootTime is btime of /proc/stat, so the time since it
// agrees with /proc/uptime within the slack it reports, and that slack is
// the one the power-loss rule has always used on Linux (3 s).
func TestBootTimeLinux(t *testing.T) {
	start, slack, err := BootTime()
	if err != nil {
		t.Fatal(err)
	}
	if slack != 3*time.Second {
		t.Errorf("slack %s, want 3s", slack)
	}
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		t.Skip("no /proc/uptime:", err)
	}
	f := strings.Fields(string(b))
	up, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		t.Fatalf("/proc/uptime %q: %v", b, err)
	}
	byUptime := time.Now().Add(-time.Duration(up * float64(time.Second)))
	if d := start.Sub(byUptime); d > slack || d < -slack {
		t.Errorf("BootTime %s, but /proc/uptime says the boot was at %s (%s apart, slack %s)", start, byUptime, d, slack)
	}
	if again, _, _ := BootTime(); !again.Equal(start) {
		t.Errorf("BootTime changed within a process: %s, then %s", start, again)
	}
}
