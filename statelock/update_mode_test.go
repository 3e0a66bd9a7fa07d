//go:build unix

package statelock

import (
	"context"
	"os"
	"testing"
)

// TestUpdateKeepsMode: Update's replacement keeps the permission bits of
// the state file it replaces; a state file it creates is 0600.
func TestUpdateKeepsMode(t *testing.T) {
	e := newEnv(t)
	inc := func(old []byte) ([]byte, error) { return append(old, 'x'), nil }
	if err := Update(context.Background(), e.state, inc, e.opts()...); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(e.state); fi.Mode() != 0o600 {
		t.Fatalf("a state file Update created is %v", fi.Mode())
	}
	for _, mode := range []os.FileMode{0o644, 0o640, 0o400} {
		if err := os.Chmod(e.state, mode); err != nil {
			t.Fatal(err)
		}
		if err := Update(context.Background(), e.state, inc, e.opts()...); err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Lstat(e.state); fi.Mode() != mode {
			t.Fatalf("after Update of a %v state file: %v", mode, fi.Mode())
		}
	}
}
