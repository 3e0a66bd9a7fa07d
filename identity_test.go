package exactfs

import (
	"io/fs"
	"math"
	"strings"
	"testing"
)

func TestIdentityStringRoundTrip(t *testing.T) {
	var sum [32]byte
	for i := range sum {
		sum[i] = byte(i * 7)
	}
	for _, id := range []Identity{
		{},
		{Dev: 0x803, Ino: 123456, Nlink: 1, Size: 4096, MtimeNs: 1700000000123456789, CtimeNs: 1700000000987654321, Mode: 0o644, SHA256: sum},
		{Dev: math.MaxUint64, Ino: math.MaxUint64, Nlink: math.MaxUint64, Size: math.MaxInt64, MtimeNs: math.MaxInt64, CtimeNs: math.MinInt64, Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		{Size: -1, MtimeNs: -1, Mode: fs.ModeSymlink | fs.ModeSetuid},
	} {
		s := id.String()
		if strings.ContainsAny(s, " \t\n") {
			t.Fatalf("%q is not one word", s)
		}
		got, err := ParseIdentity(s)
		if err != nil {
			t.Fatalf("ParseIdentity(%q): %v", s, err)
		}
		if got != id {
			t.Fatalf("round trip of %+v gave %+v", id, got)
		}
	}
}

func TestParseIdentityRefuses(t *testing.T) {
	good := Identity{Dev: 1, Ino: 2, Nlink: 1, Size: 3, Mode: 0o600}.String()
	f := strings.Split(good, ":")
	with := func(i int, v string) string {
		g := append([]string(nil), f...)
		g[i] = v
		return strings.Join(g, ":")
	}
	for _, s := range []string{
		"", "v1", "v2" + good[2:], good + ":", good[:len(good)-1], strings.Replace(good, ":", ";", 1),
		with(1, "xyz"), with(2, "-1"), with(3, ""), with(4, "1.5"), with(5, "9223372036854775808"),
		with(6, "z"), with(7, "8"), with(7, "77777777777"), with(8, strings.Repeat("g", 64)), with(8, strings.Repeat("0", 62)),
	} {
		if _, err := ParseIdentity(s); err == nil {
			t.Errorf("ParseIdentity(%q) accepted it", s)
		} else if CodeOf(err) != CodeInvalidRequest {
			t.Errorf("ParseIdentity(%q): %v, want invalid_request", s, err)
		}
	}
}

// FuzzParseIdentity: no input panics, and whatever parses prints back to a
// form that parses to the same identity.
func FuzzParseIdentity(f *testing.F) {
	f.Add(Identity{Dev: 0x803, Ino: 5, Nlink: 1, Size: 10, MtimeNs: 1, CtimeNs: 2, Mode: 0o644}.String())
	f.Add(Identity{}.String())
	f.Add("v1:::::::")
	f.Add("v1:ff:+1:1:+5:-0:0:777:" + strings.Repeat("AB", 32))
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseIdentity(s)
		if err != nil {
			if CodeOf(err) != CodeInvalidRequest {
				t.Fatalf("ParseIdentity(%q): %v", s, err)
			}
			return
		}
		again, err := ParseIdentity(id.String())
		if err != nil || again != id {
			t.Fatalf("%q parsed to %+v, which prints as %q and parses to %+v, %v", s, id, id.String(), again, err)
		}
	})
}

func TestStagingTarget(t *testing.T) {
	uuid := NewUUID()
	for _, tc := range []struct {
		name string
		dest string
		ok   bool
	}{
		{stagingName("state.json", StagingSuffix), "state.json", true},
		{stagingName("state.json", ReplacementSuffix), "state.json", true},
		{stagingName(".hidden", StagingSuffix), ".hidden", true},
		{stagingName("a.b.c", ReplacementSuffix), "a.b.c", true},
		{"." + "x" + "." + uuid + StagingSuffix, "x", true},
		// Look-alikes.
		{"state.json", "", false},
		{"x." + uuid + StagingSuffix, "", false},                   // no leading dot
		{"." + uuid + StagingSuffix, "", false},                    // no destination
		{".." + uuid + StagingSuffix, "", false},                   // empty destination
		{".x-" + uuid + StagingSuffix, "", false},                  // no dot before the uuid
		{".x." + strings.ToUpper(uuid) + StagingSuffix, "", false}, // upper case
		{".x." + uuid[:35] + StagingSuffix, "", false},             // short uuid
		{".x." + strings.ReplaceAll(uuid, "-", "") + "abcd" + StagingSuffix, "", false},
		{".x." + uuid + ".stagin", "", false},
		{".x." + uuid + StagingSuffix + ".json", "", false},
		{".x." + uuid + RemovingSuffix, "", false},
		{PlaceholderPrefix + "803-1f", "", false},
		{".gjc-delete-session-state-lock-" + uuid + ".json", "", false},
	} {
		dest, ok := StagingTarget(tc.name)
		if dest != tc.dest || ok != tc.ok {
			t.Errorf("StagingTarget(%q) = %q, %v; want %q, %v", tc.name, dest, ok, tc.dest, tc.ok)
		}
	}
}

func TestNewUUID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		u := NewUUID()
		if !isUUID(u) || u[14] != '4' || !strings.ContainsRune("89ab", rune(u[19])) || seen[u] {
			t.Fatalf("bad or repeated uuid %q", u)
		}
		seen[u] = true
	}
}
