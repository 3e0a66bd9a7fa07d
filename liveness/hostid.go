package liveness

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// SecretFileName is the name of the installation secret inside a config
// root. TypeScript peers use the same name, so pointing both at one config
// root makes them compute one host id.
const SecretFileName = "machine-identity.secret"

// Domain-separation prefixes of the two host id derivations (SPEC §3). They
// are part of the on-disk contract: changing a byte changes every host id.
const (
	hostIDContext   = "gajae-code:machine-identity:v2\x00"
	legacyIDContext = "gajae-code:telegram-daemon:machine-identity:v1\x00"
)

// HostIdentity is how records name the host that wrote them.
//
// ID is the current id: an HMAC of the machine id keyed by a per-installation
// secret, so records on a shared volume do not reveal the machine id and two
// installations on one machine (different config roots) do not recognize
// each other's records as local. LegacyID is the unkeyed id that older
// writers recorded; a record carrying it was also written on this machine.
// An empty LegacyID recognizes no legacy records.
type HostIdentity struct {
	ID       string
	LegacyID string
}

// IsLocal reports whether a record's host id names this host, under either
// the current or the legacy derivation. An empty id is never local: a record
// that does not say where it was written may come from another machine.
func (h HostIdentity) IsLocal(hostID string) bool {
	if hostID == "" {
		return false
	}
	return hostID == h.ID || (h.LegacyID != "" && hostID == h.LegacyID)
}

// FixedHostIdentity returns an identity with the given id and no legacy id,
// for callers that take the host id from configuration (the TypeScript peers
// honour GJC_HOST_ID this way) instead of deriving it. The library never
// reads such a variable itself.
func FixedHostIdentity(id string) HostIdentity {
	return HostIdentity{ID: id}
}

// DefaultConfigRoot returns the directory that holds the installation secret
// when the caller does not choose one: $XDG_CONFIG_HOME/exactfs when that is
// an absolute path, else the exactfs directory under [os.UserConfigDir].
//
// The host id depends on the secret, so processes recognize each other's
// records as local only when they use one config root. TypeScript peers
// keep theirs elsewhere (GJC_CONFIG_ROOT); to reclaim each other's dead
// locks, give exactfs that directory instead of this default. With
// different roots nothing unsafe happens: each side sees the other's
// records as foreign and never reclaims them.
func DefaultConfigRoot() (string, error) {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "exactfs"), nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("liveness: no default config root: %w", err)
	}
	return filepath.Join(dir, "exactfs"), nil
}

// LoadHostIdentity computes this host's identity from the platform machine
// id ([MachineID]) and the installation secret in configRoot, creating the
// secret if it does not exist yet. It fails, and creates nothing, when the
// machine id is unavailable.
func LoadHostIdentity(configRoot string) (HostIdentity, error) {
	return LoadHostIdentityFrom(configRoot, MachineID)
}

// LoadHostIdentityFrom is [LoadHostIdentity] with the raw machine id taken
// from machineID instead of the platform. The value is normalized the way
// the platform readers normalize it (trimmed, lower-cased) and must be 32
// hex digits or a UUID, not all zeros. A nil machineID means [MachineID].
func LoadHostIdentityFrom(configRoot string, machineID func() (string, error)) (HostIdentity, error) {
	if machineID == nil {
		machineID = MachineID
	}
	// The machine id is read first so that a host without one fails before
	// anything is created on disk.
	raw, err := machineID()
	if err != nil {
		return HostIdentity{}, err
	}
	raw, err = normalizeMachineID(raw)
	if err != nil {
		return HostIdentity{}, err
	}
	secret, err := loadSecret(configRoot)
	if err != nil {
		return HostIdentity{}, err
	}
	return deriveHostIdentity(secret, raw), nil
}

func deriveHostIdentity(secret []byte, raw string) HostIdentity {
	mac := hmac.New(sha256.New, secret)
	io.WriteString(mac, hostIDContext)
	io.WriteString(mac, raw)
	legacy := sha256.Sum256([]byte(legacyIDContext + raw))
	return HostIdentity{
		ID:       hex.EncodeToString(mac.Sum(nil)),
		LegacyID: hex.EncodeToString(legacy[:]),
	}
}

// normalizeMachineID accepts the two shapes the peers accept: a Linux
// machine id (32 hex digits) and a macOS/Windows UUID (8-4-4-4-12). An
// all-zero id is what uninitialized images and some VMs report; every such
// machine would share it, so it identifies nothing.
func normalizeMachineID(s string) (string, error) {
	id := strings.ToLower(strings.TrimSpace(s))
	ok := false
	switch len(id) {
	case 32:
		ok = isLowerHex(id)
	case 36:
		ok = id[8] == '-' && id[13] == '-' && id[18] == '-' && id[23] == '-' &&
			isLowerHex(id[:8]+id[9:13]+id[14:18]+id[19:23]+id[24:])
	}
	if !ok {
		// The value is left out of the message: hiding the machine id is
		// what the keyed host id is for, and errors end up in logs.
		return "", fmt.Errorf("liveness: machine id is malformed (%d bytes; want 32 hex digits or a UUID)", len(s))
	}
	if strings.Trim(id, "0-") == "" {
		return "", errors.New("liveness: machine id is all zeros, which identifies no machine")
	}
	return id, nil
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// secretHexLen is the length of the hex text of the 32-byte secret.
const secretHexLen = 64

// ErrMalformedSecret is matched (errors.Is) by the error for a secret file
// whose content is not exactly what SPEC §3 prescribes.
var ErrMalformedSecret = errors.New("malformed installation secret")

// malformedReads bounds how often a malformed secret is re-read before it is
// reported. Our creator publishes the secret by link(2), so a reader never
// sees a partial file; a peer on a filesystem without hard links writes the
// final name directly, and a reader can catch that write half done.
const malformedReads = 5

func loadSecret(configRoot string) ([]byte, error) {
	if configRoot == "" {
		return nil, errors.New("liveness: empty config root")
	}
	if err := ensureConfigRoot(configRoot); err != nil {
		return nil, err
	}
	file := filepath.Join(configRoot, SecretFileName)
	for range createAttempts {
		secret, err := readSecretRetrying(file)
		if !errors.Is(err, fs.ErrNotExist) {
			return secret, err
		}
		secret, err = createSecret(configRoot, file)
		if !errors.Is(err, fs.ErrExist) {
			return secret, err
		}
		// Another process linked its secret first; the loop reads the
		// winner's, so every creator ends up with the same one.
	}
	return nil, fmt.Errorf("liveness: installation secret %s keeps appearing and vanishing; is something deleting it?", file)
}

// createAttempts bounds the read-or-create loop. A second round happens
// only when another creator won the link race; more than a few mean the
// winner's secret is being deleted as fast as it appears.
const createAttempts = 8

// ensureConfigRoot creates the config root owner-only. An existing directory
// that other users may write to is refused rather than repaired: whoever can
// replace the secret can make this host's records look foreign (never
// reclaimed) or make another installation's records look local.
func ensureConfigRoot(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("liveness: creating config root: %w", err)
		}
		// The umask could have removed owner bits from the mode asked for.
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("liveness: creating config root: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("liveness: config root: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("liveness: config root %s is not a directory", dir)
	}
	return checkConfigRootMode(dir, fi)
}

func readSecretRetrying(file string) ([]byte, error) {
	for i := 0; ; i++ {
		secret, err := readSecret(file)
		if !errors.Is(err, ErrMalformedSecret) || i+1 >= malformedReads {
			return secret, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readSecret(file string) ([]byte, error) {
	f, err := openSecretNoFollow(file)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("liveness: reading installation secret: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("liveness: reading installation secret: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("liveness: installation secret %s is not a regular file (%v); remove it", file, fi.Mode().Type())
	}
	if err := tightenSecretMode(f, fi); err != nil {
		return nil, fmt.Errorf("liveness: installation secret %s: %w", file, err)
	}
	b, err := io.ReadAll(io.LimitReader(f, secretHexLen+2))
	if err != nil {
		return nil, fmt.Errorf("liveness: reading installation secret: %w", err)
	}
	return parseSecret(file, b)
}

// parseSecret accepts exactly what a creator writes, 64 lowercase hex digits
// and a newline (the newline may be missing, as in a file written by hand
// with echo -n). Anything else is reported, never repaired: a different
// secret is a different host id, and locks held under the old one would
// look foreign and never be reclaimed.
func parseSecret(file string, b []byte) ([]byte, error) {
	s := string(b)
	s = strings.TrimSuffix(s, "\n")
	if len(s) != secretHexLen || !isLowerHex(s) {
		return nil, fmt.Errorf("liveness: %w in %s: it must hold exactly 64 lowercase hex digits and a newline; "+
			"restore it from a backup or from another installation that must share this host id, "+
			"or delete it to create a new one (this changes the host id: records written under the old one will look foreign)",
			ErrMalformedSecret, file)
	}
	secret, _ := hex.DecodeString(s)
	return secret, nil
}

// createSecret publishes a new random secret at file. The content is
// complete and fsynced under a private name before link(2) gives it the
// final name, and link never replaces: concurrent creators race only on the
// link, exactly one wins, and no reader ever sees a partial secret. The
// losers get an error matching fs.ErrExist and read the winner's secret.
func createSecret(dir, file string) ([]byte, error) {
	var secret [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return nil, fmt.Errorf("liveness: generating installation secret: %w", err)
	}
	var suffix [16]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return nil, fmt.Errorf("liveness: generating installation secret: %w", err)
	}
	// The prefix is the one TypeScript creators use, so a leftover of
	// either implementation is recognizable as a stranded secret copy.
	tmp := filepath.Join(dir, ".machine-identity.secret-"+hex.EncodeToString(suffix[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|openNoFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("liveness: creating installation secret: %w", err)
	}
	// The private name is removed whatever happens: after a successful link
	// it is a second name of the secret, otherwise it is garbage.
	defer os.Remove(tmp)
	content := hex.EncodeToString(secret[:]) + "\n"
	_, err = f.WriteString(content)
	if err == nil {
		// The umask may have removed owner bits from the mode asked for,
		// leaving a secret that its owner cannot read back.
		err = f.Chmod(0o600)
	}
	if err == nil {
		// The secret must be durable before any name makes it visible:
		// a host id that changes after a crash orphans every lock.
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("liveness: writing installation secret: %w", err)
	}
	if err := os.Link(tmp, file); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		return nil, fmt.Errorf("liveness: publishing installation secret (the config root must be on a filesystem with hard links): %w", err)
	}
	// Without this, a power loss could forget the name after ids derived
	// from the secret were already written into lock records.
	if err := syncDir(dir); err != nil {
		return nil, fmt.Errorf("liveness: publishing installation secret: %w", err)
	}
	return secret[:], nil
}

var platformUUIDPattern = regexp.MustCompile(`"IOPlatformUUID"\s*=\s*"([^"]+)"`)

// parsePlatformUUID extracts the IOPlatformUUID from the output of
// `ioreg -rd1 -c IOPlatformExpertDevice` (macOS). It lives here, not in the
// darwin file, so that it is tested on every platform.
func parsePlatformUUID(out []byte) (string, error) {
	m := platformUUIDPattern.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("liveness: ioreg printed no IOPlatformUUID")
	}
	id, err := normalizeMachineID(string(m[1]))
	if err != nil || len(id) != 36 {
		return "", fmt.Errorf("liveness: IOPlatformUUID is malformed (%d bytes)", len(m[1]))
	}
	return id, nil
}

// PeekHostIdentity computes the identity LoadHostIdentity computes for
// configRoot, but only from a secret that is already there: it creates
// nothing and changes no mode, and it fails with an error matching
// fs.ErrNotExist when configRoot holds no secret. Tools use it to tell
// whether a record that names another host was in fact written on this
// machine by a process that used a different config root.
func PeekHostIdentity(configRoot string) (HostIdentity, error) {
	raw, err := MachineID()
	if err != nil {
		return HostIdentity{}, err
	}
	if raw, err = normalizeMachineID(raw); err != nil {
		return HostIdentity{}, err
	}
	file := filepath.Join(configRoot, SecretFileName)
	f, err := openSecretNoFollow(file)
	if err != nil {
		return HostIdentity{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return HostIdentity{}, err
	}
	if !fi.Mode().IsRegular() {
		return HostIdentity{}, fmt.Errorf("liveness: installation secret %s is not a regular file (%v)", file, fi.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, secretHexLen+2))
	if err != nil {
		return HostIdentity{}, err
	}
	secret, err := parseSecret(file, b)
	if err != nil {
		return HostIdentity{}, err
	}
	return deriveHostIdentity(secret, raw), nil
}
