package statelock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/exactfs/exactfs/internal/jsstr"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

type vectorFile struct {
	Live      string `json:"state_lock_live_owner_record"`
	Tombstone string `json:"state_lock_released_tombstone"`
	Legacy    string `json:"legacy_directory_info"`
}

// loadVectors reads the exact bytes of shared/vectors. testdata holds a copy
// so the package tests alone; when the shared original is beside the
// checkout, the copy must still equal it.
func loadVectors(t testing.TB) vectorFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"../../shared/vectors/vectors.json", "/work/shared/vectors/vectors.json"} {
		if orig, err := os.ReadFile(p); err == nil {
			if !bytes.Equal(orig, data) {
				t.Fatalf("testdata/vectors.json differs from %s: refresh the copy", p)
			}
			break
		}
	}
	var v vectorFile
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestVectorTombstoneBytes(t *testing.T) {
	v := loadVectors(t)
	r, err := ParseRecord([]byte(v.Tombstone))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Released || r.Pid != 1 || r.StartTime != "unknown" {
		t.Fatalf("parsed tombstone wrong: %+v", r)
	}
	got := tombstone(r.Token, r.HostID).Encode()
	if string(got) != v.Tombstone {
		t.Fatalf("tombstone bytes:\n got %s\nwant %s", got, v.Tombstone)
	}
}

func TestVectorLiveRecord(t *testing.T) {
	v := loadVectors(t)
	r, err := ParseRecord([]byte(v.Live))
	if err != nil {
		t.Fatal(err)
	}
	if r.Pid != 2039 || r.StartTime != "196036" || r.Released || r.Kernel() {
		t.Fatalf("parsed live record wrong: %+v", r)
	}
	if got := r.Encode(); string(got) != v.Live {
		t.Fatalf("re-encoded live record:\n got %s\nwant %s", got, v.Live)
	}
	// Our own records: the reference's four keys first, in order, then the
	// evidence fields in the documented order, no trailing newline.
	r.StartTimeFormat = "linux-proc-v1"
	r.PidfdIno = 12345
	r.PidNS = 4026531836
	r.BootID = "0b5e6c3a-1111-2222-3333-444455556666"
	r.OfdSlot = 12345
	got := string(r.Encode())
	want := v.Live[:len(v.Live)-1] + `,"start_time_format":"linux-proc-v1","pidfd_ino":12345,"pid_ns":4026531836,"boot_id":"0b5e6c3a-1111-2222-3333-444455556666","ofd_slot":12345}`
	if got != want {
		t.Fatalf("extended record:\n got %s\nwant %s", got, want)
	}
	back, err := ParseRecord([]byte(got))
	if err != nil || *back != *r {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	if !back.Kernel() {
		t.Fatal("a record with exactfs evidence must be recognized as kernel-attested")
	}
}

func TestVectorLegacyInfo(t *testing.T) {
	v := loadVectors(t)
	li, err := parseLegacyInfo([]byte(v.Legacy))
	if err != nil {
		t.Fatal(err)
	}
	if li.Pid != 2039 || li.StartTime != "Tue Dec  2 09:40:00 2026" || li.Timestamp != 1764668400000 || li.HostID != "" {
		t.Fatalf("legacy info: %+v", li)
	}
}

func TestParseRecordValidation(t *testing.T) {
	valid := []string{
		`{"pid":7,"start_time":"","token":"t"}`,
		`{"pid":7.0,"start_time":"1","token":"t","owner_host_id":"h"}`,
		`{"pid":7e0,"start_time":"1","token":"t","extra":[1,2]}`,
		`{"pid":9007199254740991,"start_time":"1","token":"t"}`,
		` {"pid":7,"start_time":"1","token":"t","released":true} `,
		`{"pid":7,"start_time":"1","token":"t","pidfd_ino":"junk"}`,
	}
	for _, s := range valid {
		if _, err := ParseRecord([]byte(s)); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	invalid := []string{
		``, `null`, `[]`, `"x"`, `{}`, `{"pid":7,"start_time":"1","token":"t"`,
		`{"pid":0,"start_time":"1","token":"t"}`,
		`{"pid":-3,"start_time":"1","token":"t"}`,
		`{"pid":7.5,"start_time":"1","token":"t"}`,
		`{"pid":"7","start_time":"1","token":"t"}`,
		`{"pid":9007199254740992,"start_time":"1","token":"t"}`,
		`{"pid":7,"start_time":1,"token":"t"}`,
		`{"pid":7,"token":"t"}`,
		`{"pid":7,"start_time":"1","token":""}`,
		`{"pid":7,"start_time":"1","token":"t","owner_host_id":""}`,
		`{"pid":7,"start_time":"1","token":"t","owner_host_id":null}`,
		`{"pid":7,"start_time":"1","token":"t","released":false}`,
		`{"pid":7,"start_time":"1","token":"t","released":1}`,
	}
	for _, s := range invalid {
		if r, err := ParseRecord([]byte(s)); err == nil {
			t.Errorf("%q accepted: %+v", s, r)
		}
	}
	if r, ok := historicalUnreleased([]byte(`{"pid":7,"start_time":"1","token":"t","owner_host_id":"h","released":false}`)); !ok || r.Pid != 7 || r.Released {
		t.Errorf("historical released:false shape not recognized: %+v %v", r, ok)
	}
	if _, ok := historicalUnreleased([]byte(`{"pid":7,"start_time":"1","token":"t"}`)); ok {
		t.Error("a valid record is not the historical shape")
	}
}

func TestEncodeMatchesJSONStringify(t *testing.T) {
	r := &Record{Pid: 3, StartTime: "a\"b\\c\n\x01<>&\u2028é", Token: "t", HostID: "h"}
	want := `{"pid":3,"start_time":"a\"b\\c\n\u0001<>&` + "\u2028é" + `","token":"t","owner_host_id":"h"}`
	if got := string(r.Encode()); got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	back, err := ParseRecord(r.Encode())
	if err != nil || back.StartTime != r.StartTime {
		t.Fatalf("round trip: %+v %v", back, err)
	}
}

// jsstr.Append (the records' encoder) copies runs that need no escape in one append; it must
// write exactly what the obvious rune-by-rune escaper below writes.
func FuzzAppendJSStringMatchesSimple(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b\\c\n\x01<>&\u2028é", "\xff\xfe", "x\xc3", "\ufffd", "tab\tend\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(jsstr.Append(nil, s)), simpleJSString(s); got != want {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	})
}

func simpleJSString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\ufffd`) // an invalid byte, as the escape
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
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

func FuzzParseRecord(f *testing.F) {
	v := loadVectors(f)
	f.Add([]byte(v.Live))
	f.Add([]byte(v.Tombstone))
	f.Add([]byte(`{"pid":1e400,"start_time":"","token":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseRecord(data)
		if err != nil {
			return
		}
		if r.Pid <= 0 || r.Pid > maxSafeInteger || r.Token == "" {
			t.Fatalf("accepted invalid record %q: %+v", data, r)
		}
		// Whatever we accept, we can write back, and it reads the same.
		back, err := ParseRecord(r.Encode())
		if err != nil || *back != *r {
			t.Fatalf("round trip of %q: %+v vs %+v (%v)", data, back, r, err)
		}
	})
}

func FuzzParseLegacyInfo(f *testing.F) {
	v := loadVectors(f)
	f.Add([]byte(v.Legacy))
	f.Fuzz(func(t *testing.T, data []byte) {
		li, err := parseLegacyInfo(data)
		if err == nil && (li.Pid <= 0 || li.Pid > maxSafeInteger) {
			t.Fatalf("accepted bad pid %q", data)
		}
	})
}

// The tombstone fast path reads exactly what the JSON decoder reads, and
// accepts only what the decoder accepts.
func FuzzParseTombstoneMatchesJSON(f *testing.F) {
	v := loadVectors(f)
	f.Add([]byte(v.Tombstone))
	f.Add([]byte(v.Tombstone + "    "))
	f.Add([]byte(`{"pid":1,"start_time":"unknown","token":"a\"b","owner_host_id":"h","released":true}`))
	f.Add([]byte(`{"pid":1,"start_time":"unknown","token":"","owner_host_id":"h","released":true}`))
	f.Add([]byte(`{"pid":1,"start_time":"unknown","token":"t","owner_host_id":"","released":true}`))
	f.Add([]byte("{\"pid\":1,\"start_time\":\"unknown\",\"token\":\"\xff\",\"owner_host_id\":\"h\",\"released\":true}"))
	f.Add([]byte(`{"pid":1,"start_time":"unknown","token":"t","owner_host_id":"h","released":true}x`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := parseTombstone(data)
		if !ok {
			return
		}
		slow, err := parseRecordJSON(data)
		if err != nil {
			t.Fatalf("fast path accepted %q, the decoder refuses it: %v", data, err)
		}
		if *fast != *slow {
			t.Fatalf("%q: fast %+v, decoder %+v", data, fast, slow)
		}
	})
}

func TestParseTombstoneVector(t *testing.T) {
	v := loadVectors(t)
	if _, ok := parseTombstone([]byte(v.Tombstone)); !ok {
		t.Fatalf("the tombstone vector does not take the fast path: %s", v.Tombstone)
	}
}

// TestKernelNotFromBootID: a boot id alone claims no kernel lock (exactfs
// on macOS records one without OFD locks); pid_ns, pidfd_ino or ofd_slot
// do. Fails on 20b7f43, where a boot id alone counted.
func TestKernelNotFromBootID(t *testing.T) {
	r := &Record{Pid: 1, StartTime: "x", Token: "t", HostID: "h", BootID: "0b5e6c3a-1111-2222-3333-444455556666"}
	if r.Kernel() {
		t.Error("a record with a boot id alone claims a kernel lock")
	}
	for _, set := range []func(*Record){
		func(r *Record) { r.PidNS = 4026531836 },
		func(r *Record) { r.PidfdIno = 12345 },
		func(r *Record) { r.OfdSlot = 12345 },
		func(r *Record) { r.KernelLock = true }, // Windows' LockFileEx attestation
	} {
		k := *r
		set(&k)
		if !k.Kernel() {
			t.Errorf("%+v: not kernel-attested", k)
		}
	}
}

// TestWrittenBefore: the power-loss rule's test keeps its slack.
func TestWrittenBefore(t *testing.T) {
	boot := time.Unix(1_800_000_000, 0)
	for _, c := range []struct {
		at   time.Duration // mtime relative to the boot
		want bool
	}{{-61 * time.Second, true}, {-59 * time.Second, false}, {0, false}, {time.Hour, false}} {
		if got := writtenBefore(boot.Add(c.at).UnixNano(), boot, time.Minute); got != c.want {
			t.Errorf("written %s from the boot, slack 1m: before=%v, want %v", c.at, got, c.want)
		}
	}
}
