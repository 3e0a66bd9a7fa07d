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

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
)

// SecretFileName is the name of the installation secret inside a config
// root. TypeScript peers use the same name, so pointing both at one config
// root makes them compute one host id.
const SecretFileName = "machine-identity.secret"

// Domain-separation prefixes of the two host id derivations. They
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
		return "", configRootError{fmt.Errorf("liveness: no default config root: %w", err)}
	}
	return filepath.Join(dir, "exactfs"), nil
}

// ErrConfigRootUnavailable matches (errors.Is) a failure to find, create
// or open the config root: no $HOME and no $XDG_CONFIG_HOME, a home
// directory that cannot be written, a config root that is not a
// directory or that others may write. A caller can then say what to do
// about it (name a config root the process can use) rather than only
// that a lock could not be taken. A malformed secret inside a usable
// root is not this error.
var ErrConfigRootUnavailable = errors.New("config root unavailable")

// configRootError marks err as ErrConfigRootUnavailable, keeping its message.
type configRootError struct{ err error }

func (e configRootError) Error() string        { return e.err.Error() }
func (e configRootError) Unwrap() error        { return e.err }
func (e configRootError) Is(target error) bool { return target == ErrConfigRootUnavailable }

// LoadHostIdentity computes this host's identity from the platform machine
// id ([MachineID]) and the installation secret in configRoot, creating the
// secret if it does not exist yet. It fails, and creates nothing, when the
// machine id is unavailable.
//
// The config root and the secret must be owner-only: on Unix modes 0700
// and 0600; on Windows owned by the current user, with a DACL that allows
// that user alone (the root's protected from inheritance). A missing
// config root is created so, with every missing directory above it; an
// existing root that is not owner-only is refused, never repaired, and an
// existing secret that is ours but lets others in is made owner-only. On
// Windows it refuses, creating nothing, while internal/sys's gate is shut
// (every program until the lock's Windows attestation lands).
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
// whose content is not exactly 64 lowercase hex digits and a newline (see
// parseSecret).
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
	d, err := openConfigRoot(configRoot)
	if err != nil {
		return nil, configRootError{err}
	}
	defer d.Close()
	hook.Fire(hook.SecretRootChecked, configRoot)
	file := filepath.Join(configRoot, SecretFileName)
	for range createAttempts {
		secret, err := readSecretRetrying(d, file)
		if !errors.Is(err, fs.ErrNotExist) {
			return secret, err
		}
		secret, err = createSecret(d, file)
		if !errors.Is(err, fs.ErrExist) {
			return secret, err
		}
		// Another process published its secret first; the loop reads the
		// winner's, so every creator ends up with the same one.
	}
	return nil, fmt.Errorf("liveness: installation secret %s keeps appearing and vanishing; is something deleting it?", file)
}

// createAttempts bounds the read-or-create loop. A second round happens
// only when another creator won the publication race; more than a few
// mean the winner's secret is being deleted as fast as it appears.
const createAttempts = 8

// openConfigRoot opens the config root, creating it owner-only if absent,
// and checks it. The path to the config root is the caller's
// configuration, and symlinks in it are resolved once, here (a
// ~/.config that links to a dotfiles checkout is common); from then on the
// secret is read and created beneath the descriptor that was checked, by
// the exactfs primitives, which follow no symlink, so a path swapped
// after the check changes nothing. An existing directory that other users
// may write to is refused rather than repaired: whoever can replace the
// secret can make this host's records look foreign (never reclaimed) or
// make another installation's records look local.
func openConfigRoot(dir string) (*exactfs.Dir, error) {
	resolved, err := filepath.EvalSymlinks(dir)
	var d *exactfs.Dir
	switch {
	case errors.Is(err, fs.ErrNotExist):
		d, err = createConfigRoot(dir)
		if err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("liveness: config root: %w", err)
	default:
		d, err = exactfs.OpenDir(resolved)
		if errors.Is(err, exactfs.ErrNotDirectory) {
			return nil, fmt.Errorf("liveness: config root %s is not a directory; name a directory, or a path that does not exist yet (it is then created)", dir)
		}
		if err != nil {
			return nil, fmt.Errorf("liveness: config root: %w", err)
		}
	}
	if err := checkConfigRoot(dir, d); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// createConfigRoot makes the config root dir, and every missing directory
// above it, owner-only (mkdirOwnerOnly) and returns it open. The deepest
// directory that exists is resolved once, as openConfigRoot resolves an
// existing root, and opened with exactfs before anything is made, so a
// platform where exactfs refuses (Windows while internal/sys's gate is
// shut) refuses here with nothing created; each missing directory is then
// made beneath the descriptor of its parent and opened following no
// symlink. A directory another process made meanwhile is used as found:
// for the config root itself, openConfigRoot's check decides.
func createConfigRoot(dir string) (*exactfs.Dir, error) {
	var missing []string // from the config root up
	at := filepath.Clean(dir)
	var base string
	for {
		parent := filepath.Dir(at)
		missing = append(missing, filepath.Base(at))
		resolved, err := filepath.EvalSymlinks(parent)
		if err == nil {
			base = resolved
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || parent == at {
			return nil, fmt.Errorf("liveness: creating config root %s: %w", dir, err)
		}
		at = parent
	}
	d, err := exactfs.OpenDir(base)
	if err != nil {
		return nil, fmt.Errorf("liveness: creating config root %s: %w", dir, err)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		name := missing[i]
		if err := mkdirOwnerOnly(d, name); err != nil && !errors.Is(err, fs.ErrExist) {
			d.Close()
			return nil, fmt.Errorf("liveness: creating config root %s: %w", dir, err)
		}
		next, err := d.OpenDir(name)
		at := filepath.Join(d.Name(), name)
		d.Close()
		if errors.Is(err, exactfs.ErrNotDirectory) {
			return nil, fmt.Errorf("liveness: creating config root %s: %s is not a directory; remove it or name another config root", dir, at)
		}
		if err != nil {
			return nil, fmt.Errorf("liveness: creating config root %s: %w", dir, err)
		}
		d = next
	}
	return d, nil
}

func readSecretRetrying(d *exactfs.Dir, file string) ([]byte, error) {
	for i := 0; ; i++ {
		secret, err := readSecret(d, file)
		if !errors.Is(err, ErrMalformedSecret) || i+1 >= malformedReads {
			return secret, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readSecret reads the secret beneath d. The open follows no symlink and
// refuses anything but a regular file without opening it (a FIFO cannot
// block the reader).
func readSecret(d *exactfs.Dir, file string) ([]byte, error) {
	f, err := d.OpenFile(SecretFileName, os.O_RDONLY, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, err
	case errors.Is(err, exactfs.ErrReparsePoint):
		return nil, fmt.Errorf("liveness: %s is a symbolic link, which is never followed; replace it with the secret file itself: %w", file, err)
	case errors.Is(err, exactfs.ErrNotRegularFile):
		return nil, fmt.Errorf("liveness: installation secret %s is not a regular file; remove it: %w", file, err)
	case err != nil:
		return nil, fmt.Errorf("liveness: reading installation secret: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("liveness: reading installation secret: %w", err)
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

// createSecret publishes a new random secret beneath d with the one write
// engine of exactfs (Publish): the content is complete, owner-only and
// fsynced under a private name before a rename or link that never replaces
// gives it the final name, and the directory is fsynced after. Concurrent
// creators race only on that last step, exactly one wins, and no reader
// ever sees a partial secret. The losers get an error matching fs.ErrExist
// and read the winner's secret.
func createSecret(d *exactfs.Dir, file string) ([]byte, error) {
	var secret [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return nil, fmt.Errorf("liveness: generating installation secret: %w", err)
	}
	// Exactly 0600 whatever the umask: a reader checks the secret's mode,
	// and a umask that took the owner's write bit would make every later
	// run refuse it.
	_, err := d.Publish(SecretFileName, []byte(hex.EncodeToString(secret[:])+"\n"), 0o600, exactfs.ExactPerm())
	switch {
	case errors.Is(err, fs.ErrExist):
		return nil, err
	case errors.Is(err, exactfs.ErrAtomicUnavailable):
		return nil, fmt.Errorf("liveness: publishing installation secret %s (the config root must be on a filesystem with hard links or no-replace rename): %w", file, err)
	case err != nil:
		return nil, fmt.Errorf("liveness: publishing installation secret: %w", err)
	}
	if err := sealSecret(d, file); err != nil {
		return nil, err
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
	// As openConfigRoot does, the configured path is resolved once; the
	// secret is then opened beneath that descriptor, following no symlink
	// and refusing anything but a regular file (a FIFO cannot block).
	resolved, err := filepath.EvalSymlinks(configRoot)
	if err != nil {
		return HostIdentity{}, err
	}
	d, err := exactfs.OpenDir(resolved)
	if err != nil {
		return HostIdentity{}, err
	}
	defer d.Close()
	file := filepath.Join(configRoot, SecretFileName)
	f, err := d.OpenFile(SecretFileName, os.O_RDONLY, 0)
	if err != nil {
		return HostIdentity{}, err
	}
	defer f.Close()
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
