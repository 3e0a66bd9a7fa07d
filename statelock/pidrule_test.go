package statelock

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// pidSpellings are pid values as JSON text, each with the verdict of the
// TypeScript reference's rule (JSON.parse, then Number.isSafeInteger(pid)
// && pid > 0): the record is valid exactly when it is.
var pidSpellings = []struct {
	raw   string
	valid bool
}{
	{"4194000", true}, {"4194000.0", true}, {"4194000.00", true}, {"1e3", true}, {"1E3", true}, {"1e+3", true},
	{"10e-1", true}, {"1.0000000000000001", true}, {"9007199254740991", true}, {"4.194e6", true},
	{"-0", false}, {"0", false}, {"0.0", false}, {"-1", false}, {"4194000.5", false}, {"1e-400", false},
	{"1e400", false}, {"9007199254740992", false}, {"9007199254740993", false}, {"1e21", false},
	{`"42"`, false}, {"true", false}, {"null", false}, {"[1]", false}, {"0.9999999999999999", false},
	{"0.99999999999999999", true}, // parses to exactly 1, in JavaScript as in Go
}

func pidRecord(raw string) []byte {
	return []byte(`{"pid":` + raw + `,"start_time":"x","token":"t","owner_host_id":"h"}`)
}

// TestPidRuleMatchesReference: Go's owner-record and legacy-info parsers
// accept a pid exactly when the reference's rule does, whatever its JSON
// spelling (4194000.0, 1e3, -0 ...).
func TestPidRuleMatchesReference(t *testing.T) {
	for _, c := range pidSpellings {
		_, err := ParseRecord(pidRecord(c.raw))
		if (err == nil) != c.valid {
			t.Errorf("owner record with pid %s: err %v, want valid %v", c.raw, err, c.valid)
		}
		_, err = parseLegacyInfo([]byte(`{"pid":` + c.raw + `,"start_time":"x","timestamp":1}`))
		if (err == nil) != c.valid {
			t.Errorf("legacy info with pid %s: err %v, want valid %v", c.raw, err, c.valid)
		}
	}
}

// TestPidTableIsTheReferenceRule runs the reference's rule in node on
// every spelling of the table, so the table cannot drift from JavaScript.
func TestPidTableIsTheReferenceRule(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found: the table's verdicts are checked against JavaScript only where node runs")
	}
	var raws []string
	for _, c := range pidSpellings {
		raws = append(raws, string(pidRecord(c.raw)))
	}
	in, _ := json.Marshal(raws)
	out, err := exec.Command(node, "-e", `
const recs = JSON.parse(process.argv[1]);
console.log(JSON.stringify(recs.map(r => { const o = JSON.parse(r); return typeof o.pid === "number" && Number.isSafeInteger(o.pid) && o.pid > 0; })));
`, string(in)).Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var got []bool
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(out))), &got); err != nil {
		t.Fatal(err)
	}
	for i, c := range pidSpellings {
		if got[i] != c.valid {
			t.Errorf("pid %s: JavaScript says valid %v, the table %v", c.raw, got[i], c.valid)
		}
	}
}

// jsPidRule is the reference's rule restated: JSON.parse (a JSON number
// becomes the nearest double; anything else is not a number), then
// Number.isSafeInteger(pid) && pid > 0.
func jsPidRule(raw string) bool {
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return false
	}
	f, ok := v.(float64)
	return ok && f == float64(int64(f)) && f > 0 && f <= maxSafeInteger
}

// FuzzPidSpelling: for any JSON text in the pid's place, the owner-record
// parser, the legacy-info parser and the reference's rule agree.
func FuzzPidSpelling(f *testing.F) {
	for _, c := range pidSpellings {
		f.Add(c.raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var v any
		if json.Unmarshal([]byte(raw), &v) != nil || strings.ContainsAny(raw, "{}") {
			return // not one JSON value, or one that would change the record's shape
		}
		want := jsPidRule(raw)
		if _, err := ParseRecord(pidRecord(raw)); (err == nil) != want {
			t.Fatalf("owner record with pid %q: err %v, the reference's rule says valid %v", raw, err, want)
		}
		if _, err := parseLegacyInfo([]byte(`{"pid":` + raw + `,"start_time":"x","timestamp":1}`)); (err == nil) != want {
			t.Fatalf("legacy info with pid %q: err %v, the reference's rule says valid %v", raw, err, want)
		}
	})
}
