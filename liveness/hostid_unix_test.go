//go:build unix

package liveness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
)

func checkSecretModes(t *testing.T, root, file string) {
	t.Helper()
	fi, err := os.Lstat(file)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("secret mode = %v, want a regular file with 0600", fi.Mode())
	}
	if n := fi.Sys().(*syscall.Stat_t).Nlink; n != 1 {
		t.Errorf("secret has %d links, want 1 (the temporary name must be gone)", n)
	}
	di, err := os.Stat(root)
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm() != 0o700 {
		t.Errorf("config root mode = %v, want 0700", di.Mode().Perm())
	}
}

func TestSecretModesUnderPermissiveUmask(t *testing.T) {
	root := filepath.Join(t.TempDir(), "cfg")
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	if _, err := LoadHostIdentityFrom(root, fixedMachineID(vectorMachineID)); err != nil {
		t.Fatal(err)
	}
	checkSecretModes(t, root, filepath.Join(root, SecretFileName))
}

func TestSecretModesUnderStrictUmask(t *testing.T) {
	// A umask that removes owner bits must not leave an unreadable secret.
	root := filepath.Join(t.TempDir(), "cfg")
	old := syscall.Umask(0o277)
	defer syscall.Umask(old)
	if _, err := LoadHostIdentityFrom(root, fixedMachineID(vectorMachineID)); err != nil {
		t.Fatal(err)
	}
	syscall.Umask(old)
	checkSecretModes(t, root, filepath.Join(root, SecretFileName))
}

func TestExistingSecretIsMadeOwnerOnly(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, SecretFileName)
	if err := os.WriteFile(file, []byte(vectorSecretFile), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := LoadHostIdentityFrom(root, fixedMachineID(vectorMachineID))
	if err != nil || h.ID != vectorHostID {
		t.Fatalf("got %+v, %v", h, err)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret mode = %v after load, want 0600", fi.Mode().Perm())
	}
}

func TestConfigRootWritableByOthersRefused(t *testing.T) {
	root := t.TempDir()
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := LoadHostIdentityFrom(root, fixedMachineID(vectorMachineID))
	if err == nil || !strings.Contains(err.Error(), "writable by other users") {
		t.Fatalf("err = %v, want a refusal of the group/world-writable config root", err)
	}
	if _, err := os.Lstat(filepath.Join(root, SecretFileName)); !os.IsNotExist(err) {
		t.Fatalf("a secret was created in a world-writable directory: %v", err)
	}
}

func TestSecretSymlinkNotFollowed(t *testing.T) {
	root := t.TempDir()
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(target, []byte(vectorSecretFile), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(root, SecretFileName)); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadHostIdentityFrom(root, fixedMachineID(vectorMachineID)); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("err = %v, want a refusal of the symlinked secret", err)
	}
	// A dangling symlink must not make the creator write through it.
	os.Remove(target)
	if _, err := LoadHostIdentityFrom(root, fixedMachineID(vectorMachineID)); err == nil {
		t.Fatal("a dangling symlink at the secret name was accepted")
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Fatal("the secret was created through a dangling symlink")
	}
}

func TestSecretFIFODoesNotHang(t *testing.T) {
	root := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(root, SecretFileName), 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := LoadHostIdentityFrom(root, fixedMachineID(vectorMachineID))
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("err = %v, want a refusal of the FIFO", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO secret hung")
	}
}

// The config root is checked once, and the secret is read and created
// through the directory that was checked: a symlink swapped in at the
// root's path afterwards (here to a directory anyone may write, which the
// check refuses) is not followed, and nothing lands where it points.
func TestSecretNotCreatedThroughSwappedConfigRoot(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "cfg")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(base, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(elsewhere, 0o777); err != nil {
		t.Fatal(err)
	}
	restore := hook.Set(hook.SecretRootChecked, hook.Once(func(string) {
		if err := os.Rename(root, root+".checked"); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(elsewhere, root); err != nil {
			t.Error(err)
		}
	}))
	defer restore()
	_, err := LoadHostIdentityFrom(root, fixedMachineID(vectorMachineID))
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Fatalf("the secret was created through the swapped-in symlink: %s holds %v (load: %v)", elsewhere, ents, err)
	}
	if err == nil {
		if _, serr := os.Lstat(filepath.Join(root+".checked", SecretFileName)); serr != nil {
			t.Fatalf("load succeeded, but the checked directory holds no secret: %v", serr)
		}
	}
}

// TestMissingParentsMadeOwnerOnly: the missing directories above a config
// root are made exactly 0700, whatever the umask, beneath the descriptor
// of the deepest directory that exists, whose path is resolved once (a
// symlinked ~/.config keeps working). On the old code os.MkdirAll made
// them 0700 minus the umask: under umask 0277 a parent came out 0500 and
// the config root could not be made inside it.
func TestMissingParentsMadeOwnerOnly(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "dotfiles")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(base, "config")); err != nil {
		t.Fatal(err)
	}
	for _, umask := range []int{0, 0o277} {
		top := fmt.Sprintf("u%o", umask)
		root := filepath.Join(base, "config", top, "tool", "exactfs")
		old := syscall.Umask(umask)
		_, err := LoadHostIdentityFrom(root, fixedMachineID(vectorMachineID))
		syscall.Umask(old)
		if err != nil {
			t.Fatalf("umask %#o: %v", umask, err)
		}
		for _, d := range []string{filepath.Join(real, top), filepath.Join(real, top, "tool")} {
			fi, err := os.Lstat(d)
			if err != nil {
				t.Fatal(err)
			}
			if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
				t.Errorf("umask %#o: parent %s is %v, want a directory with 0700", umask, d, fi.Mode())
			}
		}
		checkSecretModes(t, filepath.Join(real, top, "tool", "exactfs"), filepath.Join(real, top, "tool", "exactfs", SecretFileName))
	}
}
