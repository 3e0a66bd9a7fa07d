package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/exactfs/exactfs/internal/jsstr"
)

// LeaseRecord is the content of a lease lock file. On disk it is
// compact JSON followed by one newline, with the keys in the reference's
// order: attemptId, pid, bootId, processStartId, createdAt, heartbeatAt,
// leaseExpiresAt, released (only when true), and then the keys exactfs
// adds, which TypeScript readers ignore: fence, kernelLock (only when
// true) and with it dev and ino.
type LeaseRecord struct {
	AttemptID      string
	Pid            int
	BootID         string
	ProcessStartID string
	CreatedAt      int64 // Unix milliseconds
	HeartbeatAt    int64
	LeaseExpiresAt int64
	Released       bool
	// Fence is the fencing token of this acquisition; 0 when the writer
	// did not record one (TypeScript peers).
	Fence uint64
	// KernelLock says the writer took the kernel attestation
	// (liveness.HoldAttestation) on the record's inode before writing it
	// and holds it for as long as it holds the lease: in its boot, no such
	// lock on the inode proves the holder gone, before the lease expires.
	KernelLock bool
	// Dev and Ino name the inode the writer holds the attestation on
	// (written with KernelLock). A reader applies the kernel rule only
	// through a descriptor on that same inode: one that reaches the file
	// through another inode object (an overlay mount's copy) asks a lock
	// table the holder never used.
	Dev, Ino uint64
}

// Marshal returns the record's bytes on disk.
func (r LeaseRecord) Marshal() []byte {
	b := make([]byte, 0, 256)
	b = append(b, `{"attemptId":`...)
	b = appendString(b, r.AttemptID)
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(r.Pid), 10)
	b = append(b, `,"bootId":`...)
	b = appendString(b, r.BootID)
	b = append(b, `,"processStartId":`...)
	b = appendString(b, r.ProcessStartID)
	b = append(b, `,"createdAt":`...)
	b = strconv.AppendInt(b, r.CreatedAt, 10)
	b = append(b, `,"heartbeatAt":`...)
	b = strconv.AppendInt(b, r.HeartbeatAt, 10)
	b = append(b, `,"leaseExpiresAt":`...)
	b = strconv.AppendInt(b, r.LeaseExpiresAt, 10)
	if r.Released {
		b = append(b, `,"released":true`...)
	}
	if r.Fence != 0 {
		b = append(b, `,"fence":`...)
		b = strconv.AppendUint(b, r.Fence, 10)
	}
	if r.KernelLock {
		b = append(b, `,"kernelLock":true`...)
		if r.Dev != 0 || r.Ino != 0 {
			b = append(b, `,"dev":`...)
			b = strconv.AppendUint(b, r.Dev, 10)
			b = append(b, `,"ino":`...)
			b = strconv.AppendUint(b, r.Ino, 10)
		}
	}
	return append(b, "}\n"...)
}

// appendString quotes s as JSON.stringify does, so that a record holding
// any string is byte-identical to a TypeScript peer's (jsstr says where
// encoding/json differs).
func appendString(b []byte, s string) []byte { return jsstr.Append(b, s) }

// maxSafeInteger is the largest integer a JavaScript number holds exactly;
// the reference writes pids and times as numbers.
const maxSafeInteger = 1<<53 - 1

// ParseLeaseRecord reads a lease record. It accepts what the reference
// writes (with or without the trailing newline) and tolerates unknown keys.
// It requires attemptId a non-empty string, pid a safe integer > 0, bootId
// and processStartId strings, the three times integers, released absent or
// a boolean, fence absent or a non-negative integer, and kernelLock absent
// or a boolean.
func ParseLeaseRecord(b []byte) (LeaseRecord, error) {
	obj, err := decodeObject(b)
	if err != nil {
		return LeaseRecord{}, malformedRecord(err.Error())
	}
	var r LeaseRecord
	var pid, fence int64
	for _, err := range []error{
		obj.str("attemptId", &r.AttemptID, true),
		obj.integer("pid", &pid, false),
		obj.str("bootId", &r.BootID, false),
		obj.str("processStartId", &r.ProcessStartID, false),
		obj.integer("createdAt", &r.CreatedAt, false),
		obj.integer("heartbeatAt", &r.HeartbeatAt, false),
		obj.integer("leaseExpiresAt", &r.LeaseExpiresAt, false),
		obj.boolean("released", &r.Released),
		obj.integer("fence", &fence, true),
		obj.boolean("kernelLock", &r.KernelLock),
		obj.unsigned("dev", &r.Dev),
		obj.unsigned("ino", &r.Ino),
	} {
		if err != nil {
			return LeaseRecord{}, malformedRecord(err.Error())
		}
	}
	switch {
	case pid <= 0 || pid > math.MaxInt32:
		return LeaseRecord{}, malformedRecord("pid is not a positive process id")
	case fence < 0:
		return LeaseRecord{}, malformedRecord("fence is negative")
	}
	r.Pid, r.Fence = int(pid), uint64(fence)
	return r, nil
}

func malformedRecord(why string) error {
	return &Error{Op: "parse", Path: "lease record", Code: CodeMalformedRecord, Detail: "malformed lease record: " + why}
}

// jsonObject is one JSON object's members, undecoded.
type jsonObject map[string]json.RawMessage

// decodeObject reads exactly one JSON object (numbers kept exact).
func decodeObject(b []byte) (jsonObject, error) {
	var m jsonObject
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON object")
	}
	if m == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	return m, nil
}

// str reads the string member key into dst; it must be present, and not
// empty when nonEmpty.
func (m jsonObject) str(key string, dst *string, nonEmpty bool) error {
	raw, ok := m[key]
	if !ok {
		return fmt.Errorf("%s missing", key)
	}
	if err := json.Unmarshal(raw, dst); err != nil || raw[0] != '"' {
		return fmt.Errorf("%s is not a string", key)
	}
	if nonEmpty && *dst == "" {
		return fmt.Errorf("%s is empty", key)
	}
	return nil
}

// integer reads the integer member key into dst: a JSON number with an
// integral value a JavaScript number holds exactly (the reference writes
// pids and times as numbers; 1e3 is accepted as 1000). An absent member is
// an error unless optional.
func (m jsonObject) integer(key string, dst *int64, optional bool) error {
	raw, ok := m[key]
	if !ok {
		if optional {
			return nil
		}
		return fmt.Errorf("%s missing", key)
	}
	var n json.Number
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&n); err != nil || len(raw) == 0 || raw[0] == '"' {
		return fmt.Errorf("%s is not a number", key)
	}
	v, err := n.Int64()
	if err != nil {
		f, ferr := n.Float64()
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) > maxSafeInteger {
			return fmt.Errorf("%s is not an integer", key)
		}
		v = int64(f)
	}
	if v > maxSafeInteger || v < -maxSafeInteger {
		return fmt.Errorf("%s is out of range", key)
	}
	*dst = v
	return nil
}

// unsigned reads the optional member key, a decimal integer of up to 64
// bits written by exactfs (a device or inode number), into dst.
func (m jsonObject) unsigned(key string, dst *uint64) error {
	raw, ok := m[key]
	if !ok {
		return nil
	}
	v, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return fmt.Errorf("%s is not an unsigned integer", key)
	}
	*dst = v
	return nil
}

// boolean reads the optional boolean member key into dst.
func (m jsonObject) boolean(key string, dst *bool) error {
	raw, ok := m[key]
	if !ok {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil || (raw[0] != 't' && raw[0] != 'f') {
		return fmt.Errorf("%s is not a boolean", key)
	}
	return nil
}

// parseFence reads a fence counter file: a decimal number and a newline.
func parseFence(b []byte) (uint64, error) {
	s, ok := bytes.CutSuffix(b, []byte("\n"))
	if !ok || len(s) == 0 || len(s) > 20 || (len(s) > 1 && s[0] == '0') {
		return 0, &Error{Op: "parse", Path: "fence counter", Code: CodeMalformedRecord, Detail: fmt.Sprintf("malformed fence counter %q", b)}
	}
	v, err := strconv.ParseUint(string(s), 10, 64)
	if err != nil {
		return 0, &Error{Op: "parse", Path: "fence counter", Code: CodeMalformedRecord, Detail: fmt.Sprintf("malformed fence counter %q", b), Err: err}
	}
	return v, nil
}

func formatFence(v uint64) []byte { return append(strconv.AppendUint(nil, v, 10), '\n') }
