package store

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The lease_record vector of ../../shared/vectors/vectors.json (the
// reference's bytes, trailing newline included); TestLeaseVectorFileAgrees
// checks this copy.
const vectorLeaseRecord = `{"attemptId":"5c6d7e8f-9a0b-4c1d-8e2f-3a4b5c6d7e8f","pid":2039,"bootId":"4e1b7c9a-2f3d-4a5b-9c8d-7e6f5a4b3c2d","processStartId":"a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d","createdAt":1764668400000,"heartbeatAt":1764668400000,"leaseExpiresAt":1764668460000}` + "\n"

func TestLeaseVectorFileAgrees(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "shared", "vectors", "vectors.json"))
	if err != nil {
		t.Skipf("shared vectors not available: %v", err)
	}
	var v struct {
		LeaseRecord string `json:"lease_record"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if v.LeaseRecord != vectorLeaseRecord {
		t.Fatalf("vectors.json lease_record = %q, the copy here differs", v.LeaseRecord)
	}
}

func TestLeaseRecordVectorRoundTrip(t *testing.T) {
	r, err := ParseLeaseRecord([]byte(vectorLeaseRecord))
	if err != nil {
		t.Fatal(err)
	}
	want := LeaseRecord{
		AttemptID: "5c6d7e8f-9a0b-4c1d-8e2f-3a4b5c6d7e8f", Pid: 2039,
		BootID: "4e1b7c9a-2f3d-4a5b-9c8d-7e6f5a4b3c2d", ProcessStartID: "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d",
		CreatedAt: 1764668400000, HeartbeatAt: 1764668400000, LeaseExpiresAt: 1764668460000,
	}
	if r != want {
		t.Fatalf("parsed %+v, want %+v", r, want)
	}
	if got := string(r.Marshal()); got != vectorLeaseRecord {
		t.Fatalf("marshal = %q, want the reference bytes %q", got, vectorLeaseRecord)
	}
	// released, fence and kernelLock follow the reference keys, in that
	// order.
	r.Released, r.Fence, r.KernelLock = true, 7, true
	got := string(r.Marshal())
	if want := strings.TrimSuffix(vectorLeaseRecord, "}\n") + `,"released":true,"fence":7,"kernelLock":true}` + "\n"; got != want {
		t.Fatalf("marshal = %q, want %q", got, want)
	}
	if back, err := ParseLeaseRecord([]byte(got)); err != nil || back != r {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	// Without the trailing newline (a hand-written record) it still parses.
	if _, err := ParseLeaseRecord([]byte(strings.TrimSuffix(vectorLeaseRecord, "\n"))); err != nil {
		t.Fatal(err)
	}
}

func TestLeaseRecordRejects(t *testing.T) {
	base := `"attemptId":"a","pid":1,"bootId":"b","processStartId":"p","createdAt":1,"heartbeatAt":1,"leaseExpiresAt":1`
	for _, bad := range []string{
		``, `null`, `[]`, `"x"`, `{}`, `{` + base + `}{}`, `{` + base + `,"released":"yes"}`,
		`{"attemptId":"","pid":1,"bootId":"b","processStartId":"p","createdAt":1,"heartbeatAt":1,"leaseExpiresAt":1}`,
		`{"attemptId":"a","pid":0,"bootId":"b","processStartId":"p","createdAt":1,"heartbeatAt":1,"leaseExpiresAt":1}`,
		`{"attemptId":"a","pid":-4,"bootId":"b","processStartId":"p","createdAt":1,"heartbeatAt":1,"leaseExpiresAt":1}`,
		`{"attemptId":"a","pid":1.5,"bootId":"b","processStartId":"p","createdAt":1,"heartbeatAt":1,"leaseExpiresAt":1}`,
		`{"attemptId":"a","pid":"1","bootId":"b","processStartId":"p","createdAt":1,"heartbeatAt":1,"leaseExpiresAt":1}`,
		`{"attemptId":"a","pid":1,"bootId":2,"processStartId":"p","createdAt":1,"heartbeatAt":1,"leaseExpiresAt":1}`,
		`{"attemptId":"a","pid":1,"bootId":"b","processStartId":"p","createdAt":1,"heartbeatAt":1}`,
		`{"attemptId":"a","pid":1,"bootId":"b","processStartId":"p","createdAt":1e300,"heartbeatAt":1,"leaseExpiresAt":1}`,
		`{` + base + `,"fence":-1}`, `{` + base + `,"fence":"1"}`,
		`{` + base + `,"kernelLock":1}`, `{` + base + `,"kernelLock":"true"}`,
	} {
		if r, err := ParseLeaseRecord([]byte(bad)); err == nil {
			t.Errorf("ParseLeaseRecord(%s) = %+v, want an error", bad, r)
		} else if CodeOf(err) != CodeMalformedRecord {
			t.Errorf("ParseLeaseRecord(%s): code %q", bad, CodeOf(err))
		}
	}
	// Unknown keys are tolerated, as TypeScript readers tolerate ours.
	if _, err := ParseLeaseRecord([]byte(`{` + base + `,"hostId":"h","extra":[1]}`)); err != nil {
		t.Fatal(err)
	}
}

func TestFenceCounterFormat(t *testing.T) {
	for _, v := range []uint64{0, 1, 42, 1<<64 - 1} {
		if got, err := parseFence(formatFence(v)); err != nil || got != v {
			t.Fatalf("parseFence(formatFence(%d)) = %d, %v", v, got, err)
		}
	}
	for _, bad := range []string{"", "\n", "1", "01\n", "-1\n", "1 \n", "x\n", "18446744073709551616\n"} {
		if _, err := parseFence([]byte(bad)); err == nil {
			t.Errorf("parseFence(%q) accepted", bad)
		}
	}
}

func FuzzParseLeaseRecord(f *testing.F) {
	f.Add([]byte(vectorLeaseRecord))
	f.Add([]byte(`{"attemptId":"a","pid":1,"bootId":"","processStartId":"","createdAt":-5,"heartbeatAt":0,"leaseExpiresAt":9007199254740991,"released":false,"fence":3}`))
	f.Add([]byte(`{"attemptId":"\u00e9\"","pid":2147483647,"bootId":"b","processStartId":"p","createdAt":1.0,"heartbeatAt":1,"leaseExpiresAt":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseLeaseRecord(b)
		if err != nil {
			return
		}
		out := r.Marshal()
		if !bytes.HasSuffix(out, []byte("}\n")) || !bytes.HasPrefix(out, []byte(`{"attemptId":`)) {
			t.Fatalf("marshal shape: %q", out)
		}
		back, err := ParseLeaseRecord(out)
		if err != nil {
			t.Fatalf("re-parse of %q: %v", out, err)
		}
		if back != r {
			t.Fatalf("round trip changed the record: %+v -> %+v", r, back)
		}
		if again := back.Marshal(); !bytes.Equal(again, out) {
			t.Fatalf("marshal not stable: %q vs %q", out, again)
		}
	})
}

// A lease record's strings are quoted as JSON.stringify quotes them, so a
// record holding any string is the reference's bytes: U+2028, U+2029, '<',
// '>' and '&' are written as they are (encoding/json, which Marshal used
// before, escaped U+2028 and U+2029 and fails this test), control
// characters as JSON.stringify's escapes.
func TestLeaseRecordStringsAsStringify(t *testing.T) {
	r := LeaseRecord{AttemptID: "a\u2028b\u2029c<&>", Pid: 1, BootID: "q\"\\\n\x01", ProcessStartID: "é",
		CreatedAt: 1, HeartbeatAt: 2, LeaseExpiresAt: 3}
	want := "{\"attemptId\":\"a\u2028b\u2029c<&>\",\"pid\":1,\"bootId\":\"q\\\"\\\\\\n\\u0001\",\"processStartId\":\"é\"," +
		"\"createdAt\":1,\"heartbeatAt\":2,\"leaseExpiresAt\":3}\n"
	if got := string(r.Marshal()); got != want {
		t.Fatalf("marshal:\n got %q\nwant %q", got, want)
	}
	if back, err := ParseLeaseRecord([]byte(want)); err != nil || back != r {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}
