//go:build linux || darwin

package liveness

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The real ps, run for this process the way each TypeScript build runs it:
// pinned (LC_ALL=C LANG=C TZ=UTC, as exactfs's FormatPsUTC reader) and in a
// peer's own zone. Every reading parses back to one and the same second,
// the pinned one is what the model of BSD ps prints for that second, and a
// zone's reading differs from the pinned one exactly when the zone is not
// at offset 0: the older build's mismatch is real ps behaviour, not an
// artefact of the model. (Linux's procps prints lstart with C's %c layout;
// macOS's ps with the locale's %c, which is the same text under LC_ALL=C.)
func TestPsReadingsOfOneProcess(t *testing.T) {
	if _, err := exec.LookPath("ps"); err != nil {
		t.Skip("no ps here")
	}
	pid := os.Getpid()
	pinned, err := psStartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	start, err := parseLstartC(pinned, time.UTC)
	if err != nil {
		t.Fatalf("pinned reading %q: %v", pinned, err)
	}
	if model := bsdLstart(start, time.UTC, psLocales[0]); model != pinned {
		t.Fatalf("ps printed %q, the model %q", pinned, model)
	}
	read := 0
	for _, name := range psZones {
		if _, err := os.Stat(filepath.Join("/usr/share/zoneinfo", name)); err != nil {
			t.Logf("%s: not in the system's zone database; ps would read it as UTC", name)
			continue
		}
		cmd := exec.Command("ps", "-o", "lstart=", "-p", strconv.Itoa(pid))
		cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C", "TZ="+name)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("ps in %s: %v", name, err)
		}
		local := strings.TrimSpace(string(out))
		loc := zone(t, name)
		back, err := parseLstartC(local, loc)
		if err != nil || !back.Equal(start) {
			t.Fatalf("%s: %q is %v, %v; the pinned %q is %v", name, local, back, err, pinned, start)
		}
		_, off := start.In(loc).Zone()
		if (off == 0) != (local == pinned) {
			t.Fatalf("%s (offset %d s): ps read %q, pinned %q", name, off, local, pinned)
		}
		if off != 0 && tsSameIncarnation(pinned, local, true) {
			t.Fatalf("%s: an older build would keep a pinned record", name)
		}
		value, _ := startTimeWherePsOnly()
		if !tsSameIncarnation(value, local, true) || !tsSameIncarnation(value, pinned, true) {
			t.Fatalf("%s: a record saying %q would be stolen", name, value)
		}
		read++
	}
	if read < 2 {
		t.Skipf("only %d zones in the system's zone database", read)
	}
}
