package liveness

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestPeekHostIdentityCreatesNothing: without a secret, PeekHostIdentity
// fails with fs.ErrNotExist and leaves no file or directory behind; with
// one, it computes what LoadHostIdentity computes.
func TestPeekHostIdentityCreatesNothing(t *testing.T) {
	openPlatform(t)
	if _, err := MachineID(); err != nil {
		t.Skipf("no machine id here: %v", err)
	}
	root := filepath.Join(t.TempDir(), "config")
	if _, err := PeekHostIdentity(root); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("PeekHostIdentity without a secret: %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Lstat(root); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("PeekHostIdentity created the config root")
	}
	want, err := LoadHostIdentity(root)
	if err != nil {
		t.Fatal(err)
	}
	got, err := PeekHostIdentity(root)
	if err != nil || got != want {
		t.Fatalf("PeekHostIdentity = %+v, %v; LoadHostIdentity = %+v", got, err, want)
	}
}
