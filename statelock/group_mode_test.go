//go:build unix

package statelock

import (
	"fmt"
	"os"
	"syscall"
	"testing"
)

// A batch's one write keeps the state file's mode exactly, whatever the
// process's umask, as a lone Update does (TestModesIgnoreUmask in the CLI):
// group commit must not narrow who may read state that exists.
func TestGroupCommitKeepsModeUnderUmask(t *testing.T) {
	e := newEnv(t)
	if err := os.WriteFile(e.state, []byte("0"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(e.state, 0o644); err != nil {
		t.Fatal(err)
	}
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	var fns []func([]byte) ([]byte, error)
	for i := range 4 {
		fns = append(fns, func([]byte) ([]byte, error) { return []byte(fmt.Sprint(i + 1)), nil })
	}
	chs, release := queueUpdates(t, e, fns, nil)
	release()
	for i, ch := range chs {
		if err := recv(t, ch); err != nil {
			t.Fatalf("Update %d: %v", i, err)
		}
	}
	fi, err := os.Stat(e.state)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Fatalf("after a group commit under umask 077 the state file is %v, want 0644", fi.Mode().Perm())
	}
	if got := string(mustRead(t, e.state)); got != "4" {
		t.Fatalf("state %q, want 4", got)
	}
}
