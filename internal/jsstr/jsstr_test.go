package jsstr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// loadVectors reads testdata/vectors.json, a copy of shared/vectors that
// lets the package test alone; when the shared original is reachable, the
// copy must still equal it.
func loadVectors(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"../../../shared/vectors/vectors.json", "/work/shared/vectors/vectors.json"} {
		if orig, err := os.ReadFile(p); err == nil {
			if !bytes.Equal(orig, data) {
				t.Fatalf("testdata/vectors.json differs from %s: refresh the copy", p)
			}
			break
		}
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// reencode writes a flat JSON object again, in its own key order, with
// every key and string value quoted by Append and numbers and booleans
// copied: what a record encoder built on Append writes for those fields.
func reencode(t *testing.T, record string) []byte {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(record))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%q: not an object (%v)", record, err)
	}
	b := []byte{'{'}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(Append(b, k.(string)), ':')
		v, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		switch v := v.(type) {
		case string:
			b = Append(b, v)
		case json.Number:
			b = append(b, v...)
		case bool:
			b = fmt.Append(b, v)
		default:
			t.Fatalf("%q: unexpected value %v", record, v)
		}
	}
	return append(b, '}')
}

// Every record vector of shared/vectors comes out byte for byte when its
// strings are quoted by Append.
func TestRecordVectors(t *testing.T) {
	v := loadVectors(t)
	for _, name := range []string{"state_lock_live_owner_record", "state_lock_released_tombstone", "lease_record", "legacy_directory_info"} {
		var record string
		if err := json.Unmarshal(v[name], &record); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		body, nl := strings.CutSuffix(record, "\n")
		got := reencode(t, body)
		if nl {
			got = append(got, '\n')
		}
		if string(got) != record {
			t.Errorf("%s:\n got %s\nwant %s", name, got, record)
		}
	}
}

// Append copies runs that need no escape in one append; it must write
// exactly what an obvious rune-by-rune escaper writes, and its output must
// decode back to s (with U+FFFD for invalid bytes).
func FuzzAppend(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b\\c\n\x01<>&\u2028é", "\xff\xfe", "x\xc3", "\ufffd", "tab\tend\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Append(nil, s)
		if want := runeByRune(s); string(got) != want {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil || back != strings.ToValidUTF8(s, "\ufffd") && !invalidRuns(s) {
			t.Fatalf("%q: %s decodes to %q (%v)", s, got, back, err)
		}
	})
}

// invalidRuns reports whether s has two invalid bytes in a row, which
// ToValidUTF8 folds into one U+FFFD where Append writes one each.
func invalidRuns(s string) bool {
	prev := false
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		bad := r == utf8.RuneError && n == 1
		if bad && prev {
			return true
		}
		prev, i = bad, i+n
	}
	return false
}

func runeByRune(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\ufffd`)
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
