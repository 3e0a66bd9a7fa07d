package liveness

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/tsseed"
)

// The host_id vector of ../../shared/vectors/vectors.json, computed
// independently (Python standard library). Kept here so the test runs
// without the shared tree; TestVectorsFileAgrees checks the copy.
const (
	vectorSecretFile = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"
	vectorMachineID  = "0123456789abcdef0123456789abcdef"
	vectorHostID     = "9f8f00e57a0489b1952f8719376fd95272123a5833d00ac5dffdfa9d0400380e"
	vectorLegacyID   = "341b92eee911b775c73723f51a2edc61fe0d4fe7977e28330225c269457f663a"
)

func fixedMachineID(id string) func() (string, error) {
	return func() (string, error) { return id, nil }
}

func TestVectorsFileAgrees(t *testing.T) {
	shared := filepath.Join("..", "..", "shared")
	if d := os.Getenv(tsseed.SharedDirEnv); d != "" {
		shared = d
	}
	b, err := os.ReadFile(filepath.Join(shared, "vectors", "vectors.json"))
	if err != nil {
		t.Skipf("shared vectors not available: %v", err)
	}
	var v struct {
		HostID struct {
			SecretFileContent string `json:"secret_file_content"`
			MachineID         string `json:"machine_id"`
			HostID            string `json:"host_id"`
			LegacyHostID      string `json:"legacy_host_id"`
		} `json:"host_id"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if v.HostID.SecretFileContent != vectorSecretFile || v.HostID.MachineID != vectorMachineID ||
		v.HostID.HostID != vectorHostID || v.HostID.LegacyHostID != vectorLegacyID {
		t.Fatalf("vectors.json host_id = %+v, the copy in this test differs", v.HostID)
	}
}

func TestHostIdentityMatchesVectors(t *testing.T) {
	openPlatform(t)
	root := t.TempDir()
	ownerOnlyTestDir(t, root)
	if err := os.WriteFile(filepath.Join(root, SecretFileName), []byte(vectorSecretFile), 0o600); err != nil {
		t.Fatal(err)
	}
	// The machine id is given with surrounding whitespace and upper case,
	// as a file read would deliver it: it must be normalized first.
	h, err := LoadHostIdentityFrom(root, fixedMachineID("  "+strings.ToUpper(vectorMachineID)+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if h.ID != vectorHostID {
		t.Errorf("ID = %s, want %s", h.ID, vectorHostID)
	}
	if h.LegacyID != vectorLegacyID {
		t.Errorf("LegacyID = %s, want %s", h.LegacyID, vectorLegacyID)
	}
	b, err := os.ReadFile(filepath.Join(root, SecretFileName))
	if err != nil || string(b) != vectorSecretFile {
		t.Errorf("existing secret was changed: %q, %v", b, err)
	}
}

var secretFilePattern = regexp.MustCompile(`\A[0-9a-f]{64}\n\z`)

// independentHostID recomputes the host id from the secret file's bytes
// with nothing but the standard library.
func independentHostID(t *testing.T, secretFile []byte, machineID string) string {
	t.Helper()
	key, err := hex.DecodeString(strings.TrimSuffix(string(secretFile), "\n"))
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("gajae-code:machine-identity:v2\x00" + machineID))
	return hex.EncodeToString(mac.Sum(nil))
}

func TestSecretCreatedWhenAbsent(t *testing.T) {
	openPlatform(t)
	root := filepath.Join(t.TempDir(), "a", "exactfs")
	h, err := LoadHostIdentityFrom(root, fixedMachineID(vectorMachineID))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, SecretFileName)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !secretFilePattern.Match(b) {
		t.Fatalf("secret file content %q is not 64 lowercase hex digits and a newline", b)
	}
	if want := independentHostID(t, b, vectorMachineID); h.ID != want {
		t.Fatalf("ID = %s, want %s from the created secret", h.ID, want)
	}
	if h.LegacyID != vectorLegacyID {
		t.Fatalf("LegacyID = %s, want %s", h.LegacyID, vectorLegacyID)
	}
	checkSecretModes(t, root, file)
	// Nothing but the secret is left: the private temporary name is gone.
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != SecretFileName {
		t.Fatalf("config root holds %v, want only %s", entries, SecretFileName)
	}
	// A second load reads the same secret instead of creating another.
	h2, err := LoadHostIdentityFrom(root, fixedMachineID(vectorMachineID))
	if err != nil {
		t.Fatal(err)
	}
	if h2 != h {
		t.Fatalf("second load = %+v, first = %+v", h2, h)
	}
}

func helperSecret() int {
	openPlatformForHelper()
	root := os.Getenv("LIVENESS_CONFIG_ROOT")
	// Start together with the other creators, to make the race real.
	start, _ := time.Parse(time.RFC3339Nano, os.Getenv("LIVENESS_START_AT"))
	time.Sleep(time.Until(start))
	h, err := LoadHostIdentityFrom(root, fixedMachineID(vectorMachineID))
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	os.Stdout.WriteString(h.ID + "\n")
	return 0
}

func TestConcurrentCreatorsAgree(t *testing.T) {
	const creators = 8
	for round := 0; round < 3; round++ {
		root := filepath.Join(t.TempDir(), "cfg")
		start := time.Now().Add(300 * time.Millisecond).Format(time.RFC3339Nano)
		type result struct {
			out []byte
			err error
		}
		results := make(chan result, creators)
		for i := 0; i < creators; i++ {
			cmd := helperCommand(t, "secret", "LIVENESS_CONFIG_ROOT="+root, "LIVENESS_START_AT="+start)
			go func() {
				out, err := cmd.Output()
				results <- result{out, err}
			}()
		}
		ids := map[string]int{}
		for i := 0; i < creators; i++ {
			r := <-results
			if r.err != nil {
				t.Fatalf("creator failed: %v %s", r.err, stderrOf(r.err))
			}
			ids[strings.TrimSpace(string(r.out))]++
		}
		b, err := os.ReadFile(filepath.Join(root, SecretFileName))
		if err != nil {
			t.Fatal(err)
		}
		want := independentHostID(t, b, vectorMachineID)
		if len(ids) != 1 || ids[want] != creators {
			t.Fatalf("round %d: creators computed %v, want all %d to compute %s", round, ids, creators, want)
		}
		entries, err := os.ReadDir(root)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 {
			t.Fatalf("round %d: config root holds %d entries, want only the secret", round, len(entries))
		}
	}
}

func TestMalformedSecretIsAnError(t *testing.T) {
	good := strings.TrimSuffix(vectorSecretFile, "\n")
	for name, content := range map[string]string{
		"empty":              "",
		"newline only":       "\n",
		"upper case":         strings.ToUpper(good) + "\n",
		"short":              good[:63] + "\n",
		"long":               good + "0\n",
		"not hex":            good[:63] + "g\n",
		"carriage return":    good + "\r\n",
		"leading space":      " " + good + "\n",
		"two newlines":       good + "\n\n",
		"trailing garbage":   good + "\nxyz",
		"two secrets":        good + "\n" + good + "\n",
		"nul":                good + "\x00",
		"spaces inside":      good[:32] + " " + good[33:] + "\n",
		"base64 of 32 bytes": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n",
	} {
		t.Run(name, func(t *testing.T) {
			openPlatform(t)
			root := t.TempDir()
			ownerOnlyTestDir(t, root)
			file := filepath.Join(root, SecretFileName)
			if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadHostIdentityFrom(root, fixedMachineID(vectorMachineID))
			if !errors.Is(err, ErrMalformedSecret) {
				t.Fatalf("err = %v, want ErrMalformedSecret", err)
			}
			if !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "delete it") {
				t.Fatalf("error %q does not name the file and what to do", err)
			}
			if b, _ := os.ReadFile(file); string(b) != content {
				t.Fatalf("malformed secret was rewritten to %q", b)
			}
		})
	}
	t.Run("no trailing newline is accepted", func(t *testing.T) {
		openPlatform(t)
		root := t.TempDir()
		ownerOnlyTestDir(t, root)
		os.WriteFile(filepath.Join(root, SecretFileName), []byte(good), 0o600)
		h, err := LoadHostIdentityFrom(root, fixedMachineID(vectorMachineID))
		if err != nil || h.ID != vectorHostID {
			t.Fatalf("got %+v, %v; want the vector id", h, err)
		}
	})
}

func TestMachineIDNormalization(t *testing.T) {
	for in, want := range map[string]string{
		vectorMachineID:                          vectorMachineID,
		"0123456789ABCDEF0123456789ABCDEF\n":     vectorMachineID,
		" 564D7A8B-1234-ABCD-EF01-23456789ABCD ": "564d7a8b-1234-abcd-ef01-23456789abcd",
	} {
		got, err := normalizeMachineID(in)
		if err != nil || got != want {
			t.Errorf("normalizeMachineID(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{
		"", "00000000000000000000000000000000", "00000000-0000-0000-0000-000000000000",
		"0123456789abcdef0123456789abcde", "0123456789abcdef0123456789abcdefa",
		"0123456789abcdef0123456789abcdeg", "564d7a8b1234-abcd-ef01-23456789abcd-",
		"0123456789abcdef 0123456789abcdef",
	} {
		if got, err := normalizeMachineID(in); err == nil {
			t.Errorf("normalizeMachineID(%q) = %q, want an error", in, got)
		}
	}
}

func TestNoMachineIDCreatesNothing(t *testing.T) {
	root := filepath.Join(t.TempDir(), "cfg")
	boom := errors.New("no machine id here")
	if _, err := LoadHostIdentityFrom(root, func() (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
	if _, err := LoadHostIdentityFrom(root, fixedMachineID("00000000000000000000000000000000")); err == nil {
		t.Fatal("an all-zero machine id was accepted")
	}
	if _, err := os.Lstat(root); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("config root was created although the host id failed: %v", err)
	}
}

func TestEmptyConfigRoot(t *testing.T) {
	if _, err := LoadHostIdentityFrom("", fixedMachineID(vectorMachineID)); err == nil {
		t.Fatal("an empty config root was accepted")
	}
}

func TestHostIdentityIsLocal(t *testing.T) {
	h := HostIdentity{ID: "a", LegacyID: "b"}
	for id, want := range map[string]bool{"a": true, "b": true, "": false, "c": false} {
		if got := h.IsLocal(id); got != want {
			t.Errorf("IsLocal(%q) = %v", id, got)
		}
	}
	f := FixedHostIdentity("x")
	if !f.IsLocal("x") || f.IsLocal("") || f.LegacyID != "" {
		t.Errorf("FixedHostIdentity = %+v", f)
	}
	if (HostIdentity{}).IsLocal("") {
		t.Error("a zero identity recognizes an empty host id")
	}
}

func TestDefaultConfigRoot(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	got, err := DefaultConfigRoot()
	if err != nil || got != filepath.Join(dir, "exactfs") {
		t.Fatalf("DefaultConfigRoot() = %q, %v", got, err)
	}
	t.Setenv("XDG_CONFIG_HOME", "relative/path")
	got, err = DefaultConfigRoot()
	if err == nil && (!filepath.IsAbs(got) || filepath.Base(got) != "exactfs") {
		t.Fatalf("DefaultConfigRoot() with a relative XDG_CONFIG_HOME = %q", got)
	}
}

func TestParsePlatformUUID(t *testing.T) {
	out := `+-o J314sAP  <class IOPlatformExpertDevice, id 0x100000254, registered, matched, active, busy 0 (44 ms), retain 38>
    {
      "IOPolledInterface" = "AppleARMWatchdogTimerHibernateHandler is not serializable"
      "IOPlatformSerialNumber" = "XXXXXXXXXX"
      "IOPlatformUUID" = "564D7A8B-1234-ABCD-EF01-23456789ABCD"
      "IOBusyInterest" = "IOCommand is not serializable"
    }
`
	id, err := parsePlatformUUID([]byte(out))
	if err != nil || id != "564d7a8b-1234-abcd-ef01-23456789abcd" {
		t.Fatalf("parsePlatformUUID = %q, %v", id, err)
	}
	for _, bad := range []string{
		"",
		`"IOPlatformUUID" = "00000000-0000-0000-0000-000000000000"`,
		`"IOPlatformUUID" = "564D7A8B1234ABCDEF0123456789ABCD"`,
		`"IOPlatformUUID" = "not-a-uuid"`,
		`"IOPlatformSerialNumber" = "564D7A8B-1234-ABCD-EF01-23456789ABCD"`,
	} {
		if id, err := parsePlatformUUID([]byte(bad)); err == nil {
			t.Errorf("parsePlatformUUID(%q) = %q, want an error", bad, id)
		}
	}
}

func TestMalformedMachineIDNotInError(t *testing.T) {
	const leaked = "0123456789abcdef0123456789abcdeX"
	_, err := LoadHostIdentityFrom(t.TempDir(), fixedMachineID(leaked))
	if err == nil || strings.Contains(err.Error(), "0123456789") {
		t.Fatalf("err = %v: want an error that does not repeat the machine id", err)
	}
}

// TestConfigRootUnavailableIsNamed: every failure to find, create or open
// the config root matches ErrConfigRootUnavailable (so a caller can say
// "pass a config root"), and keeps its cause. Fails on f315da3, which had
// no way to tell these from any other failure.
func TestConfigRootUnavailableIsNamed(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, root := range map[string]string{
		"under a file": filepath.Join(file, "cfg"),
		"is a file":    file,
		"empty":        "",
	} {
		_, err := LoadHostIdentityFrom(root, func() (string, error) { return "0123456789abcdef0123456789abcdef", nil })
		if name == "empty" {
			if err == nil {
				t.Errorf("%s: no error", name)
			}
			continue
		}
		if !errors.Is(err, ErrConfigRootUnavailable) {
			t.Errorf("%s: %v does not match ErrConfigRootUnavailable", name, err)
		}
	}
	if runtime.GOOS == "windows" {
		return // the default root comes from %AppData%, not $HOME
	}
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("HOME", "")
	if _, err := DefaultConfigRoot(); err == nil || !errors.Is(err, ErrConfigRootUnavailable) {
		t.Errorf("DefaultConfigRoot without HOME: %v, want ErrConfigRootUnavailable", err)
	}
}
