package liveness

import (
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
)

var secretAccepted = regexp.MustCompile(`\A[0-9a-f]{64}\n?\z`)

// FuzzParseSecret checks that exactly the documented secret file shapes are
// accepted, and that an accepted secret is the bytes its hex spells.
func FuzzParseSecret(f *testing.F) {
	f.Add([]byte(vectorSecretFile))
	f.Add([]byte(strings.ToUpper(vectorSecretFile)))
	f.Add([]byte(vectorSecretFile + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		secret, err := parseSecret("/x/"+SecretFileName, b)
		if want := secretAccepted.Match(b); want != (err == nil) {
			t.Fatalf("parseSecret(%q) err = %v, accepted should be %v", b, err, want)
		}
		if err == nil && hex.EncodeToString(secret)+"\n" != strings.TrimSuffix(string(b), "\n")+"\n" {
			t.Fatalf("parseSecret(%q) = %x", b, secret)
		}
	})
}

var machineIDAccepted = regexp.MustCompile(`\A([0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\z`)

// FuzzNormalizeMachineID checks that a normalized machine id always has one
// of the two shapes, is never all zeros, and is stable under normalization.
func FuzzNormalizeMachineID(f *testing.F) {
	f.Add(vectorMachineID + "\n")
	f.Add(" 564D7A8B-1234-ABCD-EF01-23456789ABCD ")
	f.Add("00000000000000000000000000000000")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := normalizeMachineID(s)
		if err != nil {
			return
		}
		if !machineIDAccepted.MatchString(id) || strings.Trim(id, "0-") == "" {
			t.Fatalf("normalizeMachineID(%q) = %q", s, id)
		}
		if again, err := normalizeMachineID(id); err != nil || again != id {
			t.Fatalf("normalizing %q again gave %q, %v", id, again, err)
		}
	})
}
