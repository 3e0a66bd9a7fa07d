//go:build linux || darwin

package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tableValue returns the number in the demo table's row named name.
func tableValue(t *testing.T, out, name string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(name) + `\s+(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the demo table has no row %q:\n%s", name, out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func TestDemoWithChaosReportsNoViolations(t *testing.T) {
	dir := t.TempDir()
	r := runIn(t, dir, 3*time.Minute, "", "demo", "--workers", "4", "--updates", "30", "--kill-every", "6", "--dir", dir)
	expectCode(t, r, 0, "demo")
	out := r.stdout
	if got := tableValue(t, out, "expected updates"); got != 120 {
		t.Errorf("expected updates = %d, want 120", got)
	}
	if got := tableValue(t, out, "found in the state file"); got != 120 {
		t.Errorf("found = %d, want 120\n%s", got, out)
	}
	for _, row := range []string{"lost updates", "duplicated updates", "overlapping holds"} {
		if got := tableValue(t, out, row); got != 0 {
			t.Errorf("%s = %d, want 0\n%s", row, got, out)
		}
	}
	kills := tableValue(t, out, "workers killed with SIGKILL")
	if kills < 10 {
		t.Errorf("only %d kills with --kill-every 6 over 120 updates\n%s", kills, out)
	}
	if got := tableValue(t, out, "locks reclaimed from killed holders"); got != kills {
		t.Errorf("%d kills but %d reclaims\n%s", kills, got, out)
	}
	if !strings.Contains(out, "PASS") {
		t.Errorf("no PASS line:\n%s", out)
	}
}

func TestDemoWithoutChaos(t *testing.T) {
	dir := t.TempDir()
	r := runIn(t, dir, 2*time.Minute, "", "demo", "--workers", "3", "--updates", "20", "--chaos=false")
	expectCode(t, r, 0, "demo --chaos=false")
	if got := tableValue(t, r.stdout, "found in the state file"); got != 60 {
		t.Errorf("found = %d, want 60\n%s", got, r.stdout)
	}
	if strings.Contains(r.stdout, "killed") {
		t.Errorf("a demo without chaos reports kills:\n%s", r.stdout)
	}
	expectCode(t, runIn(t, dir, quick, "", "demo", "--workers", "0"), exitUsage, "demo --workers 0")
	expectCode(t, runIn(t, dir, quick, "", "demo", "extra"), exitUsage, "demo extra")
}
