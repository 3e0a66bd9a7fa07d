package liveness

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// The host id on Windows: MachineGuid, normalized as the TypeScript
// reference normalizes it, keyed by the installation secret.

// The secret of the shared test vectors (vectors/vectors.json, host_id).
const vectorSecret = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"

// A MachineGuid and the ids the reference's algorithm gives for it with
// vectorSecret, computed outside this module (Python's hmac and hashlib,
// and Node's crypto, agreeing): HMAC-SHA256 keyed by the hex-decoded secret
// over "gajae-code:machine-identity:v2\x00" + the lower-case dashed GUID,
// and SHA-256 of "gajae-code:telegram-daemon:machine-identity:v1\x00" + it.
const (
	fixedGUID         = "6f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"
	fixedGUIDHostID   = "6c73b17356dca3fcb106f6938e333f7457c53766a766c43360bf76d847e99520"
	fixedGUIDLegacyID = "fea312c57910d3b33c86a3ebd403f2bcd203fc0db197c59c9a3bfaf718fe6789"
)

var hostIDPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

func vectorSecretBytes(t *testing.T) []byte {
	t.Helper()
	secret, err := parseSecret("vectors", []byte(vectorSecret))
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// TestWindowsHostIDFromFixedGUID: a MachineGuid as the registry may hold
// it (any case, surrounding white space) gives the reference's host id
// and legacy id, byte for byte.
func TestWindowsHostIDFromFixedGUID(t *testing.T) {
	secret := vectorSecretBytes(t)
	for _, v := range []string{fixedGUID, strings.ToUpper(fixedGUID), " " + fixedGUID + "\r\n"} {
		id, err := machineGUID(v)
		if err != nil || id != fixedGUID {
			t.Fatalf("machineGUID(%q) = %q, %v; want %q", v, id, err, fixedGUID)
		}
		got := deriveHostIdentity(secret, id)
		if got.ID != fixedGUIDHostID || got.LegacyID != fixedGUIDLegacyID {
			t.Fatalf("host identity for %q = %+v, want %s / %s", v, got, fixedGUIDHostID, fixedGUIDLegacyID)
		}
	}
}

// TestWindowsMachineGUIDRefused: only the dashed GUID is a MachineGuid the
// reference accepts; every other spelling would be another host id, so it
// is refused (with a message that does not print the value) rather than
// repaired.
func TestWindowsMachineGUIDRefused(t *testing.T) {
	for _, tc := range []struct{ v, why string }{
		{"", "malformed"},
		{"{" + fixedGUID + "}", "malformed"},
		{strings.ReplaceAll(fixedGUID, "-", ""), "malformed"},
		{fixedGUID[:35] + "g", "malformed"},
		{"00000000-0000-0000-0000-000000000000", "all zeros"},
	} {
		id, err := machineGUID(tc.v)
		if err == nil {
			t.Fatalf("machineGUID(%q) = %q, want an error", tc.v, id)
		}
		if !strings.Contains(err.Error(), tc.why) || !strings.Contains(err.Error(), "MachineGuid") {
			t.Fatalf("machineGUID(%q): %v; want it to name MachineGuid and say %q", tc.v, err, tc.why)
		}
		if len(tc.v) > 8 && strings.Contains(err.Error(), strings.Trim(tc.v, "{}")[:8]) {
			t.Fatalf("machineGUID(%q): %v prints the machine id", tc.v, err)
		}
	}
}

// TestWindowsMachineIDMatchesRegQuery: MachineID reads what the reference
// reads, which it gets by running `reg query` on the key: the REG_SZ value
// there, lower-cased, is MachineID's answer.
func TestWindowsMachineIDMatchesRegQuery(t *testing.T) {
	out, err := exec.Command("reg", "query", `HKLM\SOFTWARE\Microsoft\Cryptography`, "/v", "MachineGuid").CombinedOutput()
	if err != nil {
		t.Fatalf("reg query: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`MachineGuid\s+REG_SZ\s+(\S+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("reg query printed no MachineGuid:\n%s", out)
	}
	id, err := MachineID()
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.ToLower(string(m[1])); id != want {
		t.Fatalf("MachineID() = %q, reg query says %q", id, want)
	}
}

// TestWindowsHostIDFromMachineGuid: this machine's host id, from its
// MachineGuid and a secret, is the same on every computation and in the
// reference's form (64 lower-case hex digits, the legacy id too), and a
// different secret gives a different id (two installations on one machine
// do not see each other's records as local).
func TestWindowsHostIDFromMachineGuid(t *testing.T) {
	secret := vectorSecretBytes(t)
	raw, err := MachineID()
	if err != nil {
		t.Fatal(err)
	}
	id := deriveHostIdentity(secret, raw)
	if !hostIDPattern.MatchString(id.ID) || !hostIDPattern.MatchString(id.LegacyID) {
		t.Fatalf("host identity %+v is not in the reference's form", id)
	}
	if again := deriveHostIdentity(secret, raw); again != id {
		t.Fatalf("host identity changed: %+v then %+v", id, again)
	}
	if raw != fixedGUID && (id.ID == fixedGUIDHostID || id.LegacyID == fixedGUIDLegacyID) {
		t.Fatalf("this machine's host identity %+v equals the fixed GUID's", id)
	}
	other := append([]byte(nil), secret...)
	other[0] ^= 1
	if o := deriveHostIdentity(other, raw); o.ID == id.ID || o.LegacyID != id.LegacyID {
		t.Fatalf("another secret gave %+v, this one %+v: want another id and the same legacy id", o, id)
	}
}
