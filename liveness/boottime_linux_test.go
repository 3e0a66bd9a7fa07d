package liveness

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestBootTimeLinux: BootTime is btime of /proc/stat, so the time since it
// agrees with CLOCK_BOOTTIME within the slack it reports, and that slack is
// the one the power-loss rule has always used on Linux (3 s).
func TestBootTimeLinux(t *testing.T) {
	start, slack, err := BootTime()
	if err != nil {
		t.Fatal(err)
	}
	if slack != 3*time.Second {
		t.Errorf("slack %s, want 3s", slack)
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		t.Fatal(err)
	}
	byClock := time.Now().Add(-time.Duration(ts.Nano()))
	if d := start.Sub(byClock); d > slack || d < -slack {
		t.Errorf("BootTime %s, but CLOCK_BOOTTIME says the boot was at %s (%s apart, slack %s)", start, byClock, d, slack)
	}
	if again, _, _ := BootTime(); !again.Equal(start) {
		t.Errorf("BootTime changed within a process: %s, then %s", start, again)
	}
}
