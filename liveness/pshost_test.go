package liveness

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
	_ "time/tzdata" // the zones below, whatever the test host has installed
)

// lcTime is the part of a locale's LC_TIME that strftime's %c uses, which
// is what BSD ps (macOS's) prints for lstart.
type lcTime struct {
	name   string
	c      string // the %c format
	days   [7]string
	months [12]string
}

var (
	cDays   = [7]string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}
	cMonths = [12]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}
)

// psLocales: C (what the newer TypeScript builds and exactfs pin), and
// locales an older build inherits from a user's session. The non-C entries
// follow the FreeBSD locale data macOS's libc shares; they were not checked
// on a Mac, and nothing below depends on their exact spelling, only on
// their not being the C text.
var psLocales = []lcTime{
	{"C", "%a %b %e %H:%M:%S %Y", cDays, cMonths},
	{"en_US.UTF-8", "%a %b %e %X %Y", cDays, cMonths},
	{"de_DE.UTF-8", "%a %e %b %X %Y",
		[7]string{"So", "Mo", "Di", "Mi", "Do", "Fr", "Sa"},
		[12]string{"Jan", "Feb", "Mär", "Apr", "Mai", "Jun", "Jul", "Aug", "Sep", "Okt", "Nov", "Dez"}},
	{"fr_FR.UTF-8", "%a %e %b %X %Y",
		[7]string{"Dim", "Lun", "Mar", "Mer", "Jeu", "Ven", "Sam"},
		[12]string{"jan", "fév", "mar", "avr", "mai", "jui", "jul", "aoû", "sep", "oct", "nov", "déc"}},
}

// psZones: UTC, whole-hour zones on both sides, half- and quarter-hour
// offsets, and zones with daylight saving time (Lord Howe moves by 30 min).
var psZones = []string{"UTC", "America/Los_Angeles", "America/St_Johns", "Europe/Berlin",
	"Asia/Kolkata", "Asia/Tokyo", "Pacific/Chatham", "Australia/Lord_Howe", "Pacific/Kiritimati"}

// psInstants: single- and two-digit days (lstart pads %e with a space), a
// leap day, both sides of a year's end in some zone, and summer and winter.
var psInstants = []time.Time{
	time.Date(2026, 12, 3, 18, 2, 29, 0, time.UTC),
	time.Date(2026, 12, 31, 23, 30, 0, 0, time.UTC),
	time.Date(2028, 2, 29, 9, 5, 7, 0, time.UTC),
	time.Date(2027, 7, 14, 2, 0, 0, 0, time.UTC),
	time.Date(2027, 1, 1, 0, 0, 59, 0, time.UTC),
}

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// bsdLstart is what macOS's ps prints (trimmed, as every reader trims it)
// as the lstart of a process started at start, for a reader in zone with
// LC_TIME lc: strftime("%c", localtime(start)).
func bsdLstart(start time.Time, zone *time.Location, lc lcTime) string {
	t := start.In(zone)
	var b strings.Builder
	for i := 0; i < len(lc.c); i++ {
		if lc.c[i] != '%' {
			b.WriteByte(lc.c[i])
			continue
		}
		i++
		switch lc.c[i] {
		case 'a':
			b.WriteString(lc.days[t.Weekday()])
		case 'b':
			b.WriteString(lc.months[t.Month()-1])
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'X':
			fmt.Fprintf(&b, "%02d:%02d:%02d", t.Hour(), t.Minute(), t.Second())
		case 'Y':
			fmt.Fprintf(&b, "%d", t.Year())
		default:
			panic("bsdLstart: conversion %" + string(lc.c[i]))
		}
	}
	return strings.TrimSpace(b.String())
}

// lstartLayout is the C locale's lstart text as a Go layout.
const lstartLayout = "Mon Jan _2 15:04:05 2006"

func parseLstartC(s string, zone *time.Location) (time.Time, error) {
	return time.ParseInLocation(lstartLayout, s, zone)
}

// tsSameIncarnation is how a TypeScript peer on a host without /proc
// decides whether the live process at a record's pid is still the one that
// wrote it, as read from the reference (003): a recorded "unknown" or empty
// start time proves nothing; otherwise the process is the writer only if
// the peer's own ps reading equals the recorded text, or ps gave no
// reading at all (read false). Anything else is "another incarnation",
// which the peer treats as dead: it takes the lock.
func tsSameIncarnation(recorded, reading string, read bool) bool {
	if recorded == UnknownStartTime || recorded == "" {
		return true
	}
	if read && reading == recorded {
		return true
	}
	return !read
}

// The lstart text of one instant, formatted for a zone and parsed back in
// it, is that instant, in every zone; the C text agrees with Go's layout;
// and the pinned (UTC) and a zone's text name the same second while being
// different strings whenever the zone is not at offset 0 then. That
// difference is what an older TypeScript build compares.
func TestPsTextRoundTrip(t *testing.T) {
	c := psLocales[0]
	for _, name := range psZones {
		loc := zone(t, name)
		for _, at := range psInstants {
			text := bsdLstart(at, loc, c)
			if want := at.In(loc).Format(lstartLayout); text != want {
				t.Fatalf("%s at %v: %q, Go's layout gives %q", name, at, text, want)
			}
			back, err := parseLstartC(text, loc)
			if err != nil || !back.Equal(at) {
				t.Fatalf("%s: %q parsed back as %v, %v; want %v", name, text, back, err, at)
			}
			pinned := bsdLstart(at, time.UTC, c)
			fromPinned, err := parseLstartC(pinned, time.UTC)
			if err != nil || !fromPinned.Equal(back) {
				t.Fatalf("%s: pinned %q is %v, local %q is %v", name, pinned, fromPinned, text, back)
			}
			if _, off := at.In(loc).Zone(); (off == 0) != (text == pinned) {
				t.Fatalf("%s (offset %d s): local %q, pinned %q", name, off, text, pinned)
			}
		}
	}
	for _, lc := range psLocales[1:] {
		at := psInstants[0]
		text := bsdLstart(at, time.UTC, lc)
		if lc.name == "en_US.UTF-8" {
			if text != bsdLstart(at, time.UTC, c) {
				t.Fatalf("en_US %q differs from C", text)
			}
			continue
		}
		if _, err := parseLstartC(text, time.UTC); err == nil {
			t.Fatalf("%s text %q parses as C text", lc.name, text)
		}
	}
}

// What a record written where ps is the only start time reader (macOS)
// carries keeps a live holder from both TypeScript builds, for a peer in
// any zone and locale: the newer build reads the pinned text, the older one
// its own zone's and locale's, and neither may call the holder another
// incarnation. It also shows that no ps text could do that: the pinned
// text (what exactfs wrote before) is stolen by the older build wherever
// the peer's text differs, and a peer's local text would be stolen by the
// newer build. With the pinned text as the record's start time this test
// fails for every non-UTC zone and every non-C-like locale.
func TestPsHostRecordKeptByBothTSBuilds(t *testing.T) {
	value, format := startTimeWherePsOnly()
	if value != UnknownStartTime || format != "" {
		// SPEC 4.1: start_time_format is omitted when the start time is
		// unknown.
		t.Fatalf("record start time %q, format %q; want %q and no format", value, format, UnknownStartTime)
	}
	stolenBefore := 0
	for _, name := range psZones {
		loc := zone(t, name)
		for _, lc := range psLocales {
			for _, at := range psInstants {
				newer := bsdLstart(at, time.UTC, psLocales[0])
				older := bsdLstart(at, loc, lc)
				for _, build := range []struct {
					name    string
					reading string
				}{{"newer (pinned C/UTC)", newer}, {"older (" + name + ", " + lc.name + ")", older}} {
					for _, read := range []bool{true, false} {
						if !tsSameIncarnation(value, build.reading, read) {
							t.Fatalf("the %s build (ps read %v: %q) would steal a live holder whose record says %q",
								build.name, read, build.reading, value)
						}
					}
				}
				// Why not a ps text: whichever text is recorded, one build
				// reads another whenever the two readings differ.
				if older != newer {
					stolenBefore++
					if tsSameIncarnation(newer, older, true) {
						t.Fatalf("%s %s: the older build keeps a pinned %q reading %q", name, lc.name, newer, older)
					}
					if tsSameIncarnation(older, newer, true) {
						t.Fatalf("%s %s: the newer build keeps a local %q reading %q", name, lc.name, older, newer)
					}
				}
			}
		}
	}
	if stolenBefore == 0 {
		t.Fatal("no zone or locale made the two builds' readings differ; the test shows nothing")
	}
	t.Logf("%d of %d zone/locale/instant cases: the older build would have stolen a pinned-text record",
		stolenBefore, len(psZones)*len(psLocales)*len(psInstants))
}

// exactfs's own judge reads such a record as the TypeScript peers do while
// the pid exists (without running ps for it), and still as dead when the
// pid is gone, a zombie, or from an earlier boot.
func TestPsHostRecordJudgedByExactfs(t *testing.T) {
	value, format := startTimeWherePsOnly()
	owner := Owner{Pid: 42, StartTime: value, StartTimeFormat: format, HostID: hostA, BootID: "boot-1"}
	for _, tc := range []struct {
		name   string
		probe  func(*fakeProbe)
		want   Verdict
		reason string
	}{
		{"live", func(*fakeProbe) {}, Alive, "start time unknown"},
		{"other user's", func(p *fakeProbe) { p.signal = syscall.EPERM }, Alive, "start time unknown"},
		{"gone", func(p *fakeProbe) { p.signal = syscall.ESRCH }, Dead, "ESRCH"},
		{"zombie", func(p *fakeProbe) { p.zombie = true }, Dead, "zombie"},
		{"earlier boot", func(p *fakeProbe) { p.boot = "boot-2" }, Dead, "boot differs"},
	} {
		p := &fakeProbe{boot: "boot-1", start: "Thu Dec  3 18:02:29 2026"}
		tc.probe(p)
		j := Judge{Host: FixedHostIdentity(hostA), Probe: p}
		got := j.Judge(owner)
		if got.Verdict != tc.want || !strings.Contains(got.Reason, tc.reason) {
			t.Errorf("%s: %v, want %v (%s)", tc.name, got, tc.want, tc.reason)
		}
		if p.called("start") {
			t.Errorf("%s: the judge read a start time (a ps run on macOS) for a record without one", tc.name)
		}
	}
}
