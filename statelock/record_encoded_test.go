package statelock

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
)

// encodedSamples are records as Encode writes them (every field, none,
// padding), and bytes that are nearly such records, for the agreement of
// parseEncoded with the JSON decoder.
func encodedSamples() [][]byte {
	full := &Record{Pid: 4242, StartTime: "5268564", Token: "c679be1a-e57b-4964-9be4-6c50cd04d157",
		HostID: "ef8692f49a9a26a412590624aebf9b3cd95eebb4434e55a67966b6b22db94902", StartTimeFormat: "linux-proc-v1",
		PidfdIno: 3074, PidNS: 4026531836, BootID: "0f6f8d37-3e0c-4cd6-a0b4-0c1f5ed1d0d7", OfdSlot: 3074}
	ns := &Record{Pid: 7, StartTime: "unknown", Token: "t", PidNS: 1, OfdSlot: 9, PidNSHostID: "h"}
	out := [][]byte{
		full.Encode(),
		append(full.Encode(), "    "...),
		ns.Encode(),
		// A Windows holder's record (ofd_windows.go): no start time, the
		// attestation claimed by kernel_lock.
		(&Record{Pid: 4120, StartTime: "unknown", Token: "t", HostID: "h", KernelLock: true}).Encode(),
		[]byte(`{"pid":1,"start_time":"s","token":"t","kernel_lock":false}`),
		[]byte(`{"pid":1,"start_time":"s","token":"t","kernel_lock":"true"}`),
		[]byte(`{"pid":1,"start_time":"s","token":"t","kernel_lock":1}`),
		(&Record{Pid: 1, StartTime: "", Token: "x", Released: true}).Encode(),
		tombstone("tok", "host").Encode(),
		[]byte(`{}`),
		[]byte(`{"pid":1}`),
		[]byte(`{"pid":0,"start_time":"s","token":"t"}`),
		[]byte(`{"pid":-3,"start_time":"s","token":"t"}`),
		[]byte(`{"pid":9007199254740992,"start_time":"s","token":"t"}`),
		[]byte(`{"pid":9007199254740991,"start_time":"s","token":"t"}`),
		[]byte(`{"pid":01,"start_time":"s","token":"t"}`),
		[]byte(`{"pid":1.0,"start_time":"s","token":"t"}`),
		[]byte(`{"pid":"1","start_time":"s","token":"t"}`),
		[]byte(`{"pid":1,"start_time":"s","token":""}`),
		[]byte(`{"pid":1,"start_time":"s","token":"t","owner_host_id":""}`),
		[]byte(`{"pid":1,"start_time":"s","token":"t","ofd_slot":0}`),
		[]byte(`{"pid":1,"start_time":"s","token":"t","ofd_slot":549755813888}`),
		[]byte(`{"pid":1,"start_time":"s","token":"t","ofd_slot":"5"}`),
		[]byte(`{"pid":1,"start_time":"s","token":"t","released":false}`),
		[]byte(`{"pid":1,"start_time":"s","token":"t","released":true}`),
		[]byte(`{"pid":1,"start_time":"s","token":"t","pid":2}`),
		[]byte(`{"token":"t","pid":1,"start_time":"s"}`),
		[]byte(`{"pid":1,"start_time":"s","token":"t","extra":1}`),
		[]byte(`{"pid":1,"start_time":"s\u0041","token":"t"}`),
		[]byte(`{"pid":1,"start_time":"s\"","token":"t"}`),
		[]byte(`{"pid":1,"start_time":"s","token":"t",}`),
		[]byte(`{"pid":1,"start_time":"s","token":"t"} x`),
		[]byte(`{"pid":1,"start_time":"s","token":"t"}` + "\n"),
		[]byte(`{"pid":1, "start_time":"s","token":"t"}`),
		[]byte("{\"pid\":1,\"start_time\":\"\xff\",\"token\":\"t\"}"),
		[]byte(`{"pid":1,"start_time":"s","token":"t","pidfd_ino":18446744073709551616}`),
		[]byte(`{"pid":1,"start_time":"s","token":"t","pidfd_ino":-1}`),
	}
	return out
}

// agree checks that ParseRecord (with its fast paths) and the JSON decoder
// give the same verdict and the same record for data.
func agree(t *testing.T, data []byte) {
	t.Helper()
	want, werr := parseRecordJSON(data)
	got, gerr := ParseRecord(data)
	if (werr == nil) != (gerr == nil) || (werr == nil && !reflect.DeepEqual(want, got)) {
		t.Fatalf("%q: ParseRecord %+v, %v; the JSON decoder %+v, %v", data, got, gerr, want, werr)
	}
	if r, ok := parseEncoded(data); ok && (werr != nil || !reflect.DeepEqual(r, want)) {
		t.Fatalf("%q: parseEncoded accepted %+v; the JSON decoder %+v, %v", data, r, want, werr)
	}
}

// TestParseEncodedAgrees: the decoder for exactly Encode's bytes returns
// what the JSON decoder returns, for Encode's output (which it must
// accept) and for near misses and mutations (which it must leave to the
// decoder or read identically).
func TestParseEncodedAgrees(t *testing.T) {
	samples := encodedSamples()
	for _, s := range samples[:4] {
		if _, ok := parseEncoded(s); !ok {
			t.Fatalf("%q: Encode's own bytes not accepted", s)
		}
	}
	for _, s := range samples {
		agree(t, s)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte(`{}":,0123456789-tuernlsxpid_ \\`)
	for _, s := range samples[:4] {
		for range 3000 {
			m := bytes.Clone(s)
			for range 1 + rng.IntN(3) {
				i := rng.IntN(len(m))
				switch rng.IntN(3) {
				case 0:
					m[i] = alphabet[rng.IntN(len(alphabet))]
				case 1:
					m = append(m[:i], m[i+1:]...)
				default:
					m = append(m[:i], append([]byte{alphabet[rng.IntN(len(alphabet))]}, m[i:]...)...)
				}
				if len(m) == 0 {
					break
				}
			}
			agree(t, m)
		}
	}
	for _, n := range []uint64{1, 2, 1<<39 - 1, 1 << 39, 1<<53 + 1} {
		r := &Record{Pid: int64(n % (1 << 53)), StartTime: "s", Token: "t", OfdSlot: n, PidfdIno: n}
		agree(t, r.Encode())
		agree(t, []byte(`{"pid":1,"start_time":"s","token":"t","ofd_slot":`+strconv.FormatUint(n, 10)+`}`))
	}
}

// FuzzParseEncoded: parseEncoded never accepts bytes the JSON decoder
// reads differently or refuses.
func FuzzParseEncoded(f *testing.F) {
	for _, s := range encodedSamples() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, ok := parseEncoded(data)
		if !ok {
			return
		}
		want, err := parseRecordJSON(data)
		if err != nil || !reflect.DeepEqual(r, want) {
			t.Fatalf("%q: parseEncoded %+v; the JSON decoder %+v, %v", data, r, want, err)
		}
	})
}
