package statelock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/exactfs/exactfs/internal/jsstr"
	"math"
	"strconv"
	"unicode/utf8"
)

// maxSafeInteger is the largest integer a JavaScript number holds exactly.
// TypeScript peers validate pids with Number.isSafeInteger, so a pid beyond
// it is a record they would call malformed; we call it malformed too.
const maxSafeInteger = 1<<53 - 1

// Record is one owner record: the JSON at F.lock or F.lock.transition.owner
// naming the process that holds it, or a released tombstone.
//
// The first four keys are the TypeScript reference's, in its order; the
// evidence fields exactfs adds come after owner_host_id, where readers that
// do not know them ignore them. Empty strings and zero numbers mean "absent"
// for the optional fields: a present-but-empty owner_host_id is malformed on
// read and never written.
type Record struct {
	Pid             int64
	StartTime       string
	Token           string
	HostID          string // owner_host_id; "" when the record does not say
	StartTimeFormat string // "linux-proc-v1", "ps-utc-v1", or ""
	PidfdIno        uint64
	PidNS           uint64
	BootID          string
	// OfdSlot (ofd_slot) is the writer's kernel slot (SPEC §4.8.1): the
	// writer holds a shared OFD lock on the one byte slotBase+OfdSlot of
	// the record's inode for as long as it owns the record, and a judge in
	// the same boot asks about that byte only. It is the writer's pidfd
	// inode, which no other process of the boot ever has. 0: no slot (the
	// writer holds the whole holder range [0, queueBase) instead).
	OfdSlot uint64
	// PidNSHostID (pidns_host_id) is the host id of a holder in a pid
	// namespace other than the host's initial one, which writes it instead
	// of owner_host_id: a reader that judges by the pid alone (the
	// TypeScript reference) then finds no host id and keeps the record
	// (fail closed), while exactfs readers still know the host and judge
	// the holder by its kernel lock (judge.go, kernelVerdict).
	PidNSHostID string
	// KernelLock (kernel_lock) says the writer holds the attestation lock
	// on the record's file for as long as it owns it, where the lock is
	// not an OFD lock named by the fields above: on Windows, LockFileEx
	// on a range beyond any record's end (ofd_windows.go). Only exactfs
	// writes it; TypeScript readers ignore it.
	KernelLock bool
	Released   bool
}

// Host is the host id the record names for exactfs readers: owner_host_id,
// or else pidns_host_id.
func (r *Record) Host() string {
	if r.HostID != "" {
		return r.HostID
	}
	return r.PidNSHostID
}

// Kernel reports whether the record was written by an exactfs holder, which
// also holds an OFD lock on the record's inode for as long as it holds the
// lock (see the package documentation, Beyond the reference). Only such a
// record may be judged by asking the kernel.
//
// A boot id alone does not make one: exactfs on macOS, which has no OFD
// locks, records its boot (kern.bootsessionuuid) as evidence for the pid
// rules only (a record from an earlier boot is dead). Every Linux holder
// that takes the OFD lock also records pid_ns (and pidfd_ino where the
// kernel has pidfs, and ofd_slot with a kernel slot): both it and boot_id
// come from /proc, so a Linux record with boot_id and neither would need
// a /proc that answers one and not the other. Such a record, if one
// exists, is judged by the pid rules, which never read "no lock" as dead.
func (r *Record) Kernel() bool {
	return r.PidfdIno != 0 || r.PidNS != 0 || r.OfdSlot != 0 || r.KernelLock
}

// Encode returns the record's exact on-disk bytes: compact JSON, keys in
// protocol order, no trailing newline. The bytes are what JSON.stringify
// would produce for the same object, so a TypeScript peer that rewrites a
// record and one of ours are indistinguishable on disk.
func (r *Record) Encode() []byte {
	b := make([]byte, 0, 320) // a record with every field fits
	b = append(b, `{"pid":`...)
	b = strconv.AppendInt(b, r.Pid, 10)
	b = append(b, `,"start_time":`...)
	b = jsstr.Append(b, r.StartTime)
	b = append(b, `,"token":`...)
	b = jsstr.Append(b, r.Token)
	if r.HostID != "" {
		b = append(b, `,"owner_host_id":`...)
		b = jsstr.Append(b, r.HostID)
	}
	if r.StartTimeFormat != "" {
		b = append(b, `,"start_time_format":`...)
		b = jsstr.Append(b, r.StartTimeFormat)
	}
	if r.PidfdIno != 0 {
		b = append(b, `,"pidfd_ino":`...)
		b = strconv.AppendUint(b, r.PidfdIno, 10)
	}
	if r.PidNS != 0 {
		b = append(b, `,"pid_ns":`...)
		b = strconv.AppendUint(b, r.PidNS, 10)
	}
	if r.BootID != "" {
		b = append(b, `,"boot_id":`...)
		b = jsstr.Append(b, r.BootID)
	}
	if r.OfdSlot != 0 {
		b = append(b, `,"ofd_slot":`...)
		b = strconv.AppendUint(b, r.OfdSlot, 10)
	}
	if r.PidNSHostID != "" {
		b = append(b, `,"pidns_host_id":`...)
		b = jsstr.Append(b, r.PidNSHostID)
	}
	if r.KernelLock {
		b = append(b, `,"kernel_lock":true`...)
	}
	if r.Released {
		b = append(b, `,"released":true`...)
	}
	return append(b, '}')
}

// tombstone is the released record of the protocol: pid 1 (alive in every pid
// namespace, so a reader that does not know "released" stays out rather than
// deleting it), start time unknown, a fresh token, this host, released.
func tombstone(token, hostID string) *Record {
	return &Record{Pid: 1, StartTime: "unknown", Token: token, HostID: hostID, Released: true}
}

// errMalformed marks bytes that are not a valid owner record. Such a record
// proves nothing about its writer, so it is never judged by its pid.
var errMalformed = errors.New("malformed owner record")

// ParseRecord decodes and validates owner-record bytes with the reference's
// rules: a JSON object; pid a safe integer > 0; start_time a string; token a
// non-empty string; owner_host_id absent or a non-empty string; released
// absent or exactly true. Unknown keys are ignored, as every reader must.
// The exactfs evidence fields are read when they are well formed and
// ignored otherwise (they are hints, and a TypeScript writer never sets them).
func ParseRecord(data []byte) (*Record, error) {
	if r, ok := parseTombstone(data); ok {
		return r, nil
	}
	if r, ok := parseEncoded(data); ok {
		return r, nil
	}
	return parseRecordJSON(data)
}

// parseEncoded reads a record that is exactly what Encode writes (plus
// the spaces of an in-place rewrite's padding) without the JSON decoder:
// every live record a Go owner or waiter reads under contention is one,
// and decoding them was a tenth of a contended cycle's CPU. It reads the
// keys Encode writes, in its order, with strings that need no unescaping
// and plain decimal numbers, applies ParseRecord's rules to each value,
// and then encodes what it read: only bytes identical to that encoding
// are accepted, so a record it returns is exactly the one parseRecordJSON
// returns for the same bytes (TestParseEncodedAgrees). Anything else
// (another key order, an escape, an unknown key, white space, a value the
// rules refuse) is left to the decoder.
func parseEncoded(data []byte) (*Record, bool) {
	b := bytes.TrimRight(data, " ")
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, false
	}
	r := &Record{}
	rest := b[1 : len(b)-1]
	for len(rest) > 0 {
		if rest[0] != '"' {
			return nil, false
		}
		end := bytes.IndexByte(rest[1:], '"')
		if end < 0 || len(rest) < end+3 || rest[end+2] != ':' {
			return nil, false
		}
		key := string(rest[1 : end+1])
		rest = rest[end+3:]
		var val []byte
		str := len(rest) > 0 && rest[0] == '"'
		if str {
			e := bytes.IndexByte(rest[1:], '"')
			if e < 0 {
				return nil, false
			}
			val, rest = rest[1:e+1], rest[e+2:]
			if !plainJSONString(val) {
				return nil, false
			}
		} else {
			e := bytes.IndexByte(rest, ',')
			if e < 0 {
				e = len(rest)
			}
			val, rest = rest[:e], rest[e:]
		}
		if len(rest) > 0 {
			if rest[0] != ',' || len(rest) == 1 {
				return nil, false
			}
			rest = rest[1:]
		}
		var ok bool
		switch key {
		case "pid":
			var err error
			r.Pid, err = strconv.ParseInt(string(val), 10, 64)
			ok = !str && err == nil && r.Pid > 0 && r.Pid <= maxSafeInteger
		case "start_time":
			r.StartTime, ok = string(val), str
		case "token":
			r.Token, ok = string(val), str && len(val) > 0
		case "owner_host_id":
			r.HostID, ok = string(val), str && len(val) > 0
		case "start_time_format":
			r.StartTimeFormat, ok = string(val), str
		case "pidfd_ino":
			r.PidfdIno, ok = plainUint(val, str)
		case "pid_ns":
			r.PidNS, ok = plainUint(val, str)
		case "boot_id":
			r.BootID, ok = string(val), str
		case "ofd_slot":
			r.OfdSlot, ok = plainUint(val, str)
			ok = ok && validSlot(r.OfdSlot)
		case "pidns_host_id":
			r.PidNSHostID, ok = string(val), str
		case "kernel_lock":
			r.KernelLock, ok = true, !str && string(val) == "true"
		case "released":
			r.Released, ok = true, !str && string(val) == "true"
		}
		if !ok {
			return nil, false
		}
	}
	if !bytes.Equal(r.Encode(), b) {
		return nil, false
	}
	return r, true
}

// plainUint is an unsigned decimal number value (not a string), as
// jsonUint reads it.
func plainUint(val []byte, str bool) (uint64, bool) {
	if str {
		return 0, false
	}
	n, err := strconv.ParseUint(string(val), 10, 64)
	return n, err == nil
}

// parseRecordJSON is ParseRecord through the JSON decoder.
func parseRecordJSON(data []byte) (*Record, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%w: not a JSON object", errMalformed)
	}
	r := &Record{}
	pid, ok := safeInt(m["pid"])
	if !ok || pid <= 0 {
		return nil, fmt.Errorf("%w: pid is not a positive safe integer", errMalformed)
	}
	r.Pid = pid
	if !jsonString(m["start_time"], &r.StartTime) {
		return nil, fmt.Errorf("%w: start_time is not a string", errMalformed)
	}
	if !jsonString(m["token"], &r.Token) || r.Token == "" {
		return nil, fmt.Errorf("%w: token is not a non-empty string", errMalformed)
	}
	if raw, ok := m["owner_host_id"]; ok {
		if !jsonString(raw, &r.HostID) || r.HostID == "" {
			return nil, fmt.Errorf("%w: owner_host_id is not a non-empty string", errMalformed)
		}
	}
	if raw, ok := m["released"]; ok {
		if string(bytes.TrimSpace(raw)) != "true" {
			return nil, fmt.Errorf("%w: released is present but not true", errMalformed)
		}
		r.Released = true
	}
	jsonString(m["start_time_format"], &r.StartTimeFormat)
	r.PidfdIno, _ = jsonUint(m["pidfd_ino"])
	r.PidNS, _ = jsonUint(m["pid_ns"])
	jsonString(m["boot_id"], &r.BootID)
	if n, ok := jsonUint(m["ofd_slot"]); ok && validSlot(n) {
		r.OfdSlot = n
	}
	jsonString(m["pidns_host_id"], &r.PidNSHostID)
	r.KernelLock = string(bytes.TrimSpace(m["kernel_lock"])) == "true"
	return r, nil
}

// The exact bytes of a released tombstone, as both implementations write
// it: tombstonePrefix, the token, tombstoneMiddle, the host id,
// tombstoneSuffix, then at most the spaces of an in-place rewrite's padding.
const (
	tombstonePrefix = `{"pid":1,"start_time":"unknown","token":"`
	tombstoneMiddle = `","owner_host_id":"`
	tombstoneSuffix = `","released":true}`
)

// parseTombstone reads a record in exactly the tombstone's byte shape
// without a JSON decoder: nearly every record read is one (the steady
// state of F.lock and of the sidecar). It accepts only strings that need no
// unescaping (no quote, backslash or control character, valid UTF-8), so
// it returns exactly what the decoder would; anything else is left to it.
func parseTombstone(data []byte) (*Record, bool) {
	b := bytes.TrimRight(data, " ")
	if len(b) < len(tombstonePrefix)+len(tombstoneSuffix) ||
		!bytes.HasPrefix(b, []byte(tombstonePrefix)) || !bytes.HasSuffix(b, []byte(tombstoneSuffix)) {
		return nil, false
	}
	b = b[len(tombstonePrefix) : len(b)-len(tombstoneSuffix)]
	i := bytes.Index(b, []byte(tombstoneMiddle))
	if i <= 0 || i+len(tombstoneMiddle) == len(b) {
		return nil, false
	}
	token, host := b[:i], b[i+len(tombstoneMiddle):]
	if !plainJSONString(token) || !plainJSONString(host) {
		return nil, false
	}
	return tombstone(string(token), string(host)), true
}

// plainJSONString reports whether s is the content of a JSON string that
// decodes to itself.
func plainJSONString(s []byte) bool {
	for _, c := range s {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return utf8.Valid(s)
}

// historicalUnreleased reports the one malformed shape that may be reclaimed
// by age (judgeMalformed says when): every field valid except released,
// which is false.
// It returns the record read as if released were absent.
func historicalUnreleased(data []byte) (*Record, bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return nil, false
	}
	raw, ok := m["released"]
	if !ok || string(bytes.TrimSpace(raw)) != "false" {
		return nil, false
	}
	delete(m, "released")
	fixed, err := json.Marshal(m)
	if err != nil {
		return nil, false
	}
	r, err := ParseRecord(fixed)
	return r, err == nil
}

func jsonString(raw json.RawMessage, dst *string) bool {
	if len(raw) == 0 || raw[0] != '"' {
		return false
	}
	return json.Unmarshal(raw, dst) == nil
}

// safeInt accepts what Number.isSafeInteger accepts after JSON.parse: any
// JSON number (2039, 2039.0, 2.039e3) whose value is an integer of magnitude
// at most 2^53-1.
func safeInt(raw json.RawMessage) (int64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || !(raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || f != math.Trunc(f) || math.Abs(f) > maxSafeInteger {
		return 0, false
	}
	return int64(f), true
}

func jsonUint(raw json.RawMessage) (uint64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(raw), 10, 64)
	return v, err == nil
}

// legacyInfo is the info file of a legacy F.lock/ directory, the shape an
// older runtime's generic directory lock left.
type legacyInfo struct {
	Pid             int64
	StartTime       string
	StartTimeFormat string
	Timestamp       float64
	HostID          string
}

// parseLegacyInfo validates a legacy directory lock's info JSON: pid a
// positive safe integer, start_time a string, timestamp a number,
// owner_host_id absent or a non-empty string.
func parseLegacyInfo(data []byte) (*legacyInfo, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%w: info is not a JSON object", errMalformed)
	}
	li := &legacyInfo{}
	pid, ok := safeInt(m["pid"])
	if !ok || pid <= 0 {
		return nil, fmt.Errorf("%w: info pid is not a positive safe integer", errMalformed)
	}
	li.Pid = pid
	if !jsonString(m["start_time"], &li.StartTime) {
		return nil, fmt.Errorf("%w: info start_time is not a string", errMalformed)
	}
	ts := bytes.TrimSpace(m["timestamp"])
	f, err := strconv.ParseFloat(string(ts), 64)
	if len(ts) == 0 || err != nil {
		return nil, fmt.Errorf("%w: info timestamp is not a number", errMalformed)
	}
	li.Timestamp = f
	if raw, ok := m["owner_host_id"]; ok {
		if !jsonString(raw, &li.HostID) || li.HostID == "" {
			return nil, fmt.Errorf("%w: info owner_host_id is not a non-empty string", errMalformed)
		}
	}
	jsonString(m["start_time_format"], &li.StartTimeFormat)
	return li, nil
}
