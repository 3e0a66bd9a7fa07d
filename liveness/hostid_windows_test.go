package liveness

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/sys"
	"github.com/exactfs/exactfs/internal/testfs"
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

// proveOwnerOnly proves, through a handle of path, that path is
// owner-only with a protected DACL (sys.OwnerOnly): on real Windows the
// owner is the current user and the DACL is protected and allows that user
// alone; under Wine (openPlatform's substitute) the owner alone is proved.
func proveOwnerOnly(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := sys.OwnerOnly(int(f.Fd()), true); err != nil {
		t.Errorf("%s is not owner-only with a protected DACL: %v", path, err)
	}
}

// checkSecretModes is the Windows form of the Unix 0700/0600 check: the
// config root and the secret are owner-only with a protected DACL of
// their own each (the root was created with it, the secret sealed with
// it), and the secret has one link (the staging name is gone).
func checkSecretModes(t *testing.T, root, file string) {
	t.Helper()
	proveOwnerOnly(t, root)
	proveOwnerOnly(t, file)
	fi, err := exactfs.Lstat(file)
	if err != nil {
		t.Fatal(err)
	}
	if id := fi.Sys().(exactfs.Identity); !fi.Mode().IsRegular() || id.Nlink != 1 {
		t.Errorf("secret %s: mode %v, %d links; want a regular file with one link", file, fi.Mode(), id.Nlink)
	}
}

// TestWindowsConfigRootCreatedOwnerOnly: with the gate open, a config root
// whose parents are missing too is created with every missing directory
// owner-only from its creation (sys.MkdirOwnerOnly: the security
// descriptor is given to NtCreateFile, so none of them ever carries what
// it would inherit), as Unix makes them 0700; the secret is sealed with
// its own protected owner-only DACL. On real Windows this proves the
// DACLs; under Wine, which keeps none, the owner alone (openPlatform). On
// the old code the parents were made by os.MkdirAll and inherited the
// temporary directory's DACL (SYSTEM and Administrators too), which real
// Windows shows here.
func TestWindowsConfigRootCreatedOwnerOnly(t *testing.T) {
	openPlatform(t)
	base := t.TempDir()
	root := filepath.Join(base, "a", "b", "exactfs")
	h, err := LoadHostIdentityFrom(root, fixedMachineID(vectorMachineID))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(base, "a"), filepath.Join(base, "a", "b"), root} {
		proveOwnerOnly(t, d)
	}
	file := filepath.Join(root, SecretFileName)
	checkSecretModes(t, root, file)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if want := independentHostID(t, b, vectorMachineID); h.ID != want {
		t.Fatalf("ID = %s, want %s from the created secret", h.ID, want)
	}
	if again, err := LoadHostIdentityFrom(root, fixedMachineID(vectorMachineID)); err != nil || again != h {
		t.Fatalf("second load = %+v, %v; first = %+v", again, err, h)
	}
	if got := treeNames(t, base); !slices.Equal(got, []string{"a/", "a/b/", "a/b/exactfs/", "a/b/exactfs/" + SecretFileName}) {
		t.Fatalf("the load left %q", got)
	}
}

// TestWindowsConfigRootNotOwnerOnlyRefused: with the gate open and the
// real DACL check (no Wine substitute), an existing config root that is
// not owner-only (here one os.Mkdir made, which inherits its parent's
// DACL: on real Windows SYSTEM and Administrators, under Wine a
// synthesized one that lets Everyone read) is refused, never repaired:
// the error names the directory, says what was found and what to do, and
// matches ErrConfigRootUnavailable; the secret in it is neither read into
// a host id nor changed, and nothing is created.
func TestWindowsConfigRootNotOwnerOnlyRefused(t *testing.T) {
	defer sys.OpenGateForTest()()
	root := filepath.Join(t.TempDir(), "cfg")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, SecretFileName)
	if err := os.WriteFile(file, []byte(vectorSecretFile), 0o600); err != nil {
		t.Fatal(err)
	}
	before := testfs.Tree(t, root)
	h, err := LoadHostIdentityFrom(root, fixedMachineID(vectorMachineID))
	if err == nil {
		t.Fatalf("LoadHostIdentity accepted a config root that inherits its parent's DACL: %+v", h)
	}
	t.Logf("refusal: %v", err)
	// ErrACLPresent: entries for others, or inherited ones; ErrNotOwner
	// when the test runs elevated (an elevated process's directories are
	// owned by Administrators).
	if !errors.Is(err, ErrConfigRootUnavailable) || !(errors.Is(err, sys.ErrACLPresent) || errors.Is(err, sys.ErrNotOwner)) ||
		!strings.Contains(err.Error(), root) || !strings.Contains(err.Error(), "not owner-only") || !strings.Contains(err.Error(), "protected DACL") {
		t.Fatalf("LoadHostIdentity: %v; want ErrConfigRootUnavailable naming %s, saying it is not owner-only and what to do", err, root)
	}
	if after := testfs.Tree(t, root); !slices.Equal(after, before) {
		t.Fatalf("the refusal changed the config root: %q, was %q", after, before)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != vectorSecretFile {
		t.Fatalf("the refusal changed the secret: %q, %v", b, err)
	}
}

// TestWindowsMkdirOwnerOnly: mkdirOwnerOnly (sys.MkdirOwnerOnly) makes one
// directory beneath a handle, owner-only, and never adopts or walks:
// anything at the name is fs.ErrExist, and a name with a separator or a
// dot-name is refused before any call. A file created inside the new
// directory inherits its one entry, so it is owner-only too (on real
// Windows; under Wine the owner alone is proved).
func TestWindowsMkdirOwnerOnly(t *testing.T) {
	openPlatform(t)
	base := t.TempDir()
	d, err := exactfs.OpenDir(base)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := mkdirOwnerOnly(d, "new"); err != nil {
		t.Fatal(err)
	}
	proveOwnerOnly(t, filepath.Join(base, "new"))
	inside := filepath.Join(base, "new", "file")
	if err := os.WriteFile(inside, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(inside)
	if err != nil {
		t.Fatal(err)
	}
	if err := sys.OwnerOnly(int(f.Fd()), false); err != nil {
		// Run elevated, the test's own file is owned by Administrators
		// (the token's default owner), and the owner check refuses before
		// the DACL is looked at: only a run that is not elevated proves
		// the inherited entry.
		if mine, oerr := sys.OwnedByDefaultOwner(int(f.Fd())); !errors.Is(err, sys.ErrNotOwner) || oerr != nil || !mine {
			t.Errorf("a file created in the owner-only directory: %v", err)
		}
	}
	f.Close()
	if err := os.WriteFile(filepath.Join(base, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"new", "NEW", "file"} {
		if err := mkdirOwnerOnly(d, name); !errors.Is(err, fs.ErrExist) {
			t.Errorf("mkdirOwnerOnly(%q) over an existing name: %v, want fs.ErrExist", name, err)
		}
	}
	for _, name := range []string{"", ".", "..", "a/b", `a\b`, "nul", "x:y", "dot."} {
		if err := mkdirOwnerOnly(d, name); err == nil || errors.Is(err, fs.ErrExist) {
			t.Errorf("mkdirOwnerOnly(%q): %v, want a refusal", name, err)
		}
	}
	if got := treeNames(t, base); !slices.Equal(got, []string{"file", "new/", "new/file"}) {
		t.Fatalf("left %q", got)
	}
}

// treeNames is testfs.Tree with names only, "/"-separated, directories
// ending in "/".
func treeNames(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, e := range testfs.Tree(t, dir) {
		name, _, _ := strings.Cut(e, " ")
		out = append(out, filepath.ToSlash(name))
	}
	return out
}
