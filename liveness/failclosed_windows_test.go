package liveness

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/sys"
	"github.com/exactfs/exactfs/internal/testfs"
)

// TestWindowsHostIdentityFailsClosed: while internal/sys's gate is shut
// (every program, until issue 22 step 4 opens it), the host identity
// cannot be loaded on Windows (the config root and the secret go through
// exactfs, which refuses), and the refusal creates nothing: no config
// root, no secret, no change to a secret that is there. The tests that
// open the gate (openPlatform) prove the Windows code behind it.
func TestWindowsHostIdentityFailsClosed(t *testing.T) {
	dir := t.TempDir()
	fresh := filepath.Join(dir, "exactfs")     // no such directory yet; its parent exists, like %APPDATA%
	existing := filepath.Join(dir, "existing") // a config root with a secret
	if err := os.Mkdir(existing, 0o700); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(existing, SecretFileName)
	const secretText = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"
	if err := os.WriteFile(secret, []byte(secretText), 0o600); err != nil {
		t.Fatal(err)
	}
	before := testfs.Tree(t, dir)
	for _, tc := range []struct {
		name string
		op   func() error
	}{
		{"LoadHostIdentity/fresh", func() error { _, err := LoadHostIdentity(fresh); return err }},
		{"LoadHostIdentity/existing", func() error { _, err := LoadHostIdentity(existing); return err }},
		{"PeekHostIdentity/existing", func() error { _, err := PeekHostIdentity(existing); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.op()
			if err == nil {
				t.Fatalf("%s succeeded on Windows, where the port is not done", tc.name)
			}
			t.Logf("%s: %v", tc.name, err)
			if !errors.Is(err, exactfs.ErrUnsupported) || !strings.Contains(err.Error(), "unsupported on windows") {
				t.Fatalf("%s: %v (code %q), want an error that says Windows is unsupported", tc.name, err, exactfs.CodeOf(err))
			}
			if after := testfs.Tree(t, dir); !slices.Equal(after, before) {
				t.Fatalf("%s changed the directory:\nbefore %q\nafter  %q", tc.name, before, after)
			}
			if b, err := os.ReadFile(secret); err != nil || string(b) != secretText {
				t.Fatalf("%s changed the secret: %q, %v", tc.name, b, err)
			}
		})
	}
}

// TestWindowsConfigRootParentsFailClosed: a config root whose parent does
// not exist either must not leave that parent behind when the platform
// refuses. It failed before: openConfigRoot made the parents with package
// os (os.MkdirAll) before exactfs.Mkdir refused the root itself, so the
// parent directories stayed. Now the deepest directory that exists is
// opened with exactfs first, which refuses before anything is made, and
// each missing directory is made beneath its parent's handle.
func TestWindowsConfigRootParentsFailClosed(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "missing", "parent", "exactfs")
	_, err := LoadHostIdentity(root)
	if err == nil || !errors.Is(err, exactfs.ErrUnsupported) {
		t.Fatalf("LoadHostIdentity(%s) = %v, want an unsupported error", root, err)
	}
	if after := testfs.Tree(t, dir); len(after) != 0 {
		t.Fatalf("LoadHostIdentity refused (%v) but changed the directory: %q", err, after)
	}
}

// TestWindowsMachineID: the one Windows reader that works today. It must
// return MachineGuid normalized as the TypeScript peers normalize it
// (lower case, dashed), the same on every call.
func TestWindowsMachineID(t *testing.T) {
	id, err := MachineID()
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`).MatchString(id) {
		t.Fatalf("MachineID() = %q, want a lower-case dashed GUID", id)
	}
	if again, err := MachineID(); err != nil || again != id {
		t.Fatalf("MachineID() changed: %q then %q, %v", id, again, err)
	}
}

// TestWindowsOwnerOnlyChecksFailClosed: the config root and the secret
// must be proved owner-only (on Windows by their DACL, sys.OwnerOnly)
// before the host id is derived from them. Behind internal/sys's gate both
// checks refuse, saying why, and the secret is not touched: were they the
// no-ops they were, LoadHostIdentity would trust a secret anyone could
// replace as soon as the file primitives work.
func TestWindowsOwnerOnlyChecksFailClosed(t *testing.T) {
	dir := t.TempDir()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	err = checkConfigRootHandle(dir, d)
	if err == nil || !errors.Is(err, sys.ErrUnsupported) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "only its owner") {
		t.Fatalf("checkConfigRootHandle(%s) = %v, want a refusal that names the directory and says what cannot be proved", dir, err)
	}
	t.Logf("config root: %v", err)
	const secretText = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"
	file := filepath.Join(dir, SecretFileName)
	if err := os.WriteFile(file, []byte(secretText), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	err = tightenSecretMode(f, fi)
	if err == nil || !errors.Is(err, sys.ErrUnsupported) || !strings.Contains(err.Error(), "only its owner") {
		t.Fatalf("tightenSecretMode = %v, want a refusal that says what cannot be proved", err)
	}
	t.Logf("secret: %v", err)
	if b, err := os.ReadFile(file); err != nil || string(b) != secretText {
		t.Fatalf("the secret changed: %q, %v", b, err)
	}
}
